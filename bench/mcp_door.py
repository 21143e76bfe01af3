"""``toolhost mcp`` against the MCP reference filesystem server, in the same run.

Theirs: ``@modelcontextprotocol/server-filesystem`` (npm; Node.js) on the same folder,
``read_text_file`` of a one-line file. Ours: ``toolhost mcp --no-attach``, ``read`` of the
same file. Both over stdio, newline-delimited JSON-RPC, as an MCP host runs them.

- **spawn → first call**: from starting the process to the answer of its first
  ``tools/call`` (``initialize``, ``notifications/initialized``, the call), each server
  started afresh, taking turns.
- **round trip**: the same call repeated on a running server, in alternating blocks with
  a pause before each (so neither inherits the other's CPU placement).
- **attached**: ``toolhost mcp`` attached to an editor's sidecar (a ``toolhost serve``
  this benchmark starts as an editor would) against ``toolhost mcp --no-attach``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import _npm
from _common import Row, RpcClient, log, median, now, server_env, toolhost_argv
from read_peers import McpClient

from server.lockfile import discover

TOOLHOST_MCP = [*toolhost_argv()[:-1], "mcp"]
SPAWN_TARGET = 1.0
ROUND_TRIP_TARGET = 1.0
ATTACHED_TARGET = 1.3
PAUSE = 0.3
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "toolhost-bench", "version": "1"},
}


async def handshake(client: McpClient) -> None:
    await client.request("initialize", INITIALIZE)
    await client.notify("notifications/initialized")


async def first_call(
    argv: list[str], root: Path, call: dict[str, Any], env: dict[str, str]
) -> float:
    start = now()
    client = await spawn(argv, root, env)
    try:
        await handshake(client)
        answer = await client.request("tools/call", call)
        took = now() - start
    finally:
        await client.close()
    if answer.get("isError"):
        raise RuntimeError(f"{argv[0]}: {answer}")
    return took


async def spawn(argv: list[str], root: Path, env: dict[str, str]) -> McpClient:
    return await McpClient.spawn(argv, root, env)


async def round_trips(
    pairs: list[tuple[McpClient, dict[str, Any], list[float]]], calls: int, blocks: int
) -> None:
    for client, call, _ in pairs:  # warm up
        for _ in range(max(20, calls // 10)):
            await client.request("tools/call", call)
    for _ in range(blocks):
        for client, call, samples in pairs:
            await asyncio.sleep(PAUSE)
            for _ in range(calls // blocks):
                start = now()
                await client.request("tools/call", call)
                samples.append(now() - start)


async def sidecar_socket(root: Path, timeout: float = 30.0) -> None:
    real = os.path.realpath(root)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(real in lock.workspace_folders and lock.socket for lock in discover()):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the editor's sidecar wrote no lock file with a socket")


async def run(quick: bool) -> list[Row]:
    spawns = 6 if quick else 20
    calls = 300 if quick else 2000
    blocks = 6 if quick else 10
    theirs_argv = [str(_npm.filesystem_server())]
    with tempfile.TemporaryDirectory(prefix="bench-mcp-door-") as tmp:
        scratch = Path(tmp).resolve()
        root = scratch / "project"
        root.mkdir()
        target = root / "one.txt"
        target.write_text("the only line\n")
        runtime = scratch / "run"
        runtime.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # the lock files this run's sidecar writes
        env = {**server_env(scratch), "XDG_RUNTIME_DIR": str(runtime)}
        ours_call = {"name": "read", "arguments": {"filePath": str(target)}}
        theirs_call = {"name": "read_text_file", "arguments": {"path": str(target)}}
        alone = [*TOOLHOST_MCP, "--no-attach"]
        theirs = [*theirs_argv, str(root)]

        await first_call(alone, root, ours_call, env)  # compile the bytecode once
        await first_call(theirs, root, theirs_call, env)
        ours_spawn: list[float] = []
        theirs_spawn: list[float] = []
        for _ in range(spawns):
            ours_spawn.append(await first_call(alone, root, ours_call, env))
            theirs_spawn.append(await first_call(theirs, root, theirs_call, env))
        log(
            f"spawn -> first call: ours {median(ours_spawn) * 1e3:.0f} ms, "
            f"theirs {median(theirs_spawn) * 1e3:.0f} ms"
        )

        ours_rt: list[float] = []
        theirs_rt: list[float] = []
        ours, other = await spawn(alone, root, env), await spawn(theirs, root, env)
        try:
            await handshake(ours)
            await handshake(other)
            await round_trips(
                [(ours, ours_call, ours_rt), (other, theirs_call, theirs_rt)], calls, blocks
            )
        finally:
            await ours.close()
            await other.close()
        log(
            f"round trip: ours {median(ours_rt) * 1e6:.0f} µs, "
            f"theirs {median(theirs_rt) * 1e6:.0f} µs"
        )

        attached_rt: list[float] = []
        alone_rt: list[float] = []
        editor = await RpcClient.spawn(toolhost_argv(), cwd=root, env=env)
        try:
            await editor.initialize(root)
            await sidecar_socket(root)
            attached, lone = await spawn(TOOLHOST_MCP, root, env), await spawn(alone, root, env)
            try:
                await handshake(attached)
                await handshake(lone)
                listed = await attached.request("tools/call", ours_call)
                if "attachedTo" not in str(listed):
                    raise RuntimeError("toolhost mcp did not attach to the sidecar")
                await round_trips(
                    [(attached, ours_call, attached_rt), (lone, ours_call, alone_rt)], calls, blocks
                )
            finally:
                await attached.close()
                await lone.close()
        finally:
            await editor.close()
        log(
            f"attached round trip: {median(attached_rt) * 1e6:.0f} µs, "
            f"alone {median(alone_rt) * 1e6:.0f} µs"
        )

    def row(name: str, ours: list[float], base: list[float], target: float, note: str) -> Row:
        ratio = median(ours) / median(base)
        return Row(name, median(ours), median(base), f"≤ {target:g}x", ratio <= target, note=note)

    return [
        row(
            "toolhost mcp spawn → first call vs MCP filesystem server",
            ours_spawn,
            theirs_spawn,
            SPAWN_TARGET,
            f"{spawns} spawns each, taking turns; initialize, initialized, one tools/call",
        ),
        row(
            "toolhost mcp one-line read round trip vs MCP filesystem server",
            ours_rt,
            theirs_rt,
            ROUND_TRIP_TARGET,
            f"{calls} calls each in {blocks} alternating blocks",
        ),
        row(
            "toolhost mcp attached round trip vs unattached",
            attached_rt,
            alone_rt,
            ATTACHED_TARGET,
            "attached: forwarded to an editor's toolhost serve over its Unix socket",
        ),
    ]
