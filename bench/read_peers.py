"""``read`` of a 2000-line file vs the MCP reference filesystem server, in the same run.

Ours: ``tools/execute`` of ``read`` through the sidecar (LSP framing), which returns the
2000 lines numbered (the file is 40 KB, under the 50 KB page). Theirs:
``@modelcontextprotocol/server-filesystem`` (npm; Node.js), ``tools/call`` of
``read_text_file`` on the same file over its stdio transport (newline-delimited JSON),
which returns the text as it is. Both servers stay up; they take turns in blocks.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import _npm
from _common import (
    CALL_TIMEOUT,
    Row,
    RpcClient,
    execute,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)

LINES = 2000
BLOCKS = 10
TARGET = 1.0


class McpClient:
    """A minimal MCP stdio client: newline-delimited JSON-RPC."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._id = 0

    @classmethod
    async def spawn(
        cls, argv: list[str], cwd: Path, env: dict[str, str] | None = None
    ) -> McpClient:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 24,
        )
        return cls(proc)

    async def request(self, method: str, params: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._id += 1
        message = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the MCP server closed its stdout")
            answer = json.loads(line)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"MCP error: {answer['error']}")
                return answer["result"]

    async def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        await self.proc.stdin.drain()

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def run(quick: bool) -> list[Row]:
    calls = 200 if quick else 1000
    warmup = 50 if quick else 100
    entry = _npm.filesystem_server()
    with tempfile.TemporaryDirectory(prefix="bench-read-peers-") as tmp:
        scratch = Path(tmp).resolve()
        root = scratch / "project"
        root.mkdir()
        target = root / "lines.txt"
        target.write_text("".join(f"line {i:04d} of the file\n" for i in range(1, LINES + 1)))
        ours_client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=server_env(scratch))
        theirs = await McpClient.spawn([str(entry), str(root)], root)
        try:
            await ours_client.initialize(root)
            await theirs.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "toolhost-bench", "version": "1"},
                },
            )
            await theirs.notify("notifications/initialized")
            args = {"filePath": str(target)}
            mine = await execute(ours_client, "read", args)
            if f"{LINES}: line {LINES:04d} of the file" not in mine["output"]:
                raise RuntimeError("our read did not return all 2000 lines")
            call = {"name": "read_text_file", "arguments": {"path": str(target)}}
            got = await theirs.request("tools/call", call)
            if f"line {LINES:04d}" not in got["content"][0]["text"]:
                raise RuntimeError(f"the MCP server's read failed: {str(got)[:200]}")
            ours: list[float] = []
            base: list[float] = []
            params = {"tool": "read", "args": args}

            async def ours_once() -> None:
                result = await ours_client.request("tools/execute", params)
                if result.get("isError"):
                    raise RuntimeError(result["output"])

            async def theirs_once() -> None:
                await theirs.request("tools/call", call)

            for _ in range(warmup):
                await ours_once()
                await theirs_once()
            async with ours_client.deadline(CALL_TIMEOUT + calls * 0.1, "read blocks"):
                for _ in range(BLOCKS):
                    for once, samples in ((ours_once, ours), (theirs_once, base)):
                        for _ in range(calls // BLOCKS):
                            start = now()
                            await once()
                            samples.append(now() - start)
        finally:
            await ours_client.close()
            await theirs.close()
    log(f"read 2000 lines: ours {median(ours) * 1e6:.0f} µs, mcp {median(base) * 1e6:.0f} µs")
    ratio = median(ours) / median(base)
    return [
        Row(
            "read 2000 lines vs MCP filesystem server",
            median(ours),
            median(base),
            f"≤ {TARGET:g}x",
            ratio <= TARGET,
            note=f"{calls} calls each after {warmup} warm-up, alternating in {BLOCKS} blocks; "
            "@modelcontextprotocol/server-filesystem read_text_file",
        )
    ]
