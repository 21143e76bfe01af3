"""Baseline for the round-trip benchmark: a hand-written asyncio JSON-RPC echo server.

Reads LSP-framed messages from stdin with an asyncio stream, answers every
request with its own params, ignores notifications, and leaves on ``exit`` or EOF.
This is the floor for "a Python process answering JSON-RPC over stdio".
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

from _common import frame, read_frame


def echo(params: Any) -> Any:
    return params


async def serve(answer: Callable[[Any], Any] = echo) -> None:
    """``answer``: a request's result from its params (``baseline_echo_read.py`` has its own)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while (message := await read_frame(reader)) is not None:
        if message.get("method") == "exit":
            return
        if "id" in message and "method" in message:
            result = answer(message.get("params"))
            out.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": result}))
            out.flush()


if __name__ == "__main__":
    asyncio.run(serve())
