"""Baseline for the round-trip benchmark: a hand-written asyncio JSON-RPC echo server.

Reads LSP-framed messages from stdin with an asyncio stream, answers every
request with its own params, ignores notifications, and leaves on ``exit`` or EOF.
This is the floor for "a Python process answering JSON-RPC over stdio".
"""

from __future__ import annotations

import asyncio
import json
import sys


async def serve() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while True:
        length = -1
        while True:
            line = await reader.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        message = json.loads(await reader.readexactly(length))
        if message.get("method") == "exit":
            return
        if "id" in message and "method" in message:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")},
                separators=(",", ":"),
            ).encode()
            out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            out.flush()


if __name__ == "__main__":
    asyncio.run(serve())
