"""Baseline for the round-trip benchmark: a hand-written asyncio JSON-RPC echo server.

Reads LSP-framed messages from stdin with an asyncio stream, answers every
request with its own params, ignores notifications, and leaves on ``exit`` or EOF.
This is the floor for "a Python process answering JSON-RPC over stdio".
"""

from __future__ import annotations

import asyncio
import sys

from _common import frame, read_frame


async def serve() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while (message := await read_frame(reader)) is not None:
        if message.get("method") == "exit":
            return
        if "id" in message and "method" in message:
            out.write(
                frame({"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")})
            )
            out.flush()


if __name__ == "__main__":
    asyncio.run(serve())
