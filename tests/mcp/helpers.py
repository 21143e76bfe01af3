"""Driving ``toolhost mcp`` with the official MCP Python SDK's client over stdio."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
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


def npm_install(folder: Path, spec: str, binary: Path) -> str | None:
    """Install the npm package ``spec`` into ``folder`` unless ``binary`` is there already;
    None when it is there now, else what npm said. One install at a time, across runs."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return None
        if not (folder / "package.json").exists():  # npm installs here, not into a parent
            (folder / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", spec],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode == 0 and binary.exists():
            return None
        return (done.stderr or done.stdout).strip()[-2000:]
