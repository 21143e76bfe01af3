"""Driving ``toolhost mcp`` with the official MCP Python SDK's client over stdio."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLHOST = Path(sys.executable).with_name("toolhost")


def server_params(root: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return StdioServerParameters(
        command=str(TOOLHOST),
        args=["mcp", *args],
        cwd=str(root),
        env={**os.environ, **(env or {})},
    )


@contextlib.asynccontextmanager
async def mcp_client(
    root: Path, *args: str, initialize: bool = True, **session: Any
) -> AsyncIterator[ClientSession]:
    """A ``toolhost mcp`` in ``root`` and an SDK ``ClientSession`` on it (initialized)."""
    async with (
        stdio_client(server_params(root, *args)) as (read, write),
        ClientSession(read, write, **session) as client,
    ):
        if initialize:
            await client.initialize()
        yield client


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")
