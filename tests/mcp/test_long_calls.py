"""A long command over MCP, on the wire: a heartbeat while it is quiet, and a cancel that
ends its whole process tree within a second.

Each door that can serve a client: the lean door and the SDK's (``TOOLHOST_MCP_ENGINE=sdk``),
alone and attached to an editor's sidecar (the client's pipes handed over to the sidecar,
or each call forwarded). The client is this test speaking newline-delimited JSON-RPC, so
every notification is seen as sent. The real agents are in ``test_agents_long.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.mcp.progress import HEARTBEAT_SECONDS
from tests.mcp.helpers import TOOLHOST
from tests.mcp.process_table import holding, long_command, seconds_until_gone, wait_for_sleepers
from tests.mcp.test_attach import editor_session, sidecar_lock

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "long-calls", "version": "0"},
}
WAYS = [
    ("lean", "alone"),
    ("sdk", "alone"),
    ("lean", "handed-over"),
    ("lean", "forwarded"),  # the SDK's door forwards through the same backend
]


class RawClient:
    """One ``toolhost mcp`` and the messages it sent, as they came."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[tuple[float, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.seen.append((time.monotonic(), json.loads(line)))
            self.changed.set()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.proc.stdin.drain()

    async def until(self, found: Any, within: float = 60) -> dict[str, Any]:
        async with asyncio.timeout(within):
            while True:
                for _, message in self.seen:
                    if found(message):
                        return message
                self.changed.clear()
                await self.changed.wait()

    async def answer(self, request_id: int, within: float = 60) -> dict[str, Any]:
        return await self.until(lambda m: m.get("id") == request_id and "method" not in m, within)

    def progress(self, token: str) -> list[tuple[float, dict[str, Any]]]:
        return [
            (at, m["params"])
            for at, m in self.seen
            if m.get("method") == "notifications/progress" and m["params"]["progressToken"] == token
        ]


@contextlib.asynccontextmanager
async def raw_mcp(root: Path, engine: str, where: str) -> AsyncIterator[RawClient]:
    env = {**os.environ, "TOOLHOST_MCP_ENGINE": engine}
    args = ["mcp"]
    if where == "alone":
        args.append("--no-attach")
    else:
        env["TOOLHOST_MCP_HANDOVER"] = "1" if where == "handed-over" else "0"
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST), *args, cwd=root, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    client = RawClient(proc)
    try:
        await client.send({"id": 0, "method": "initialize", "params": INIT})
        await client.answer(0)
        await client.send({"method": "notifications/initialized"})
        yield client
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        await client.reader


@contextlib.asynccontextmanager
async def served(root: Path, engine: str, where: str) -> AsyncIterator[RawClient]:
    """A connected client, with an editor's sidecar on ``root`` when not alone."""
    if where == "alone":
        async with raw_mcp(root, engine, where) as client:
            yield client
        return
    async with editor_session(root):
        await sidecar_lock(root)
        async with raw_mcp(root, engine, where) as client:
            yield client


def bash(request_id: int, command: str, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "bash",
        "arguments": {"command": command, "description": "long"},
    }
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize(("engine", "where"), WAYS, ids=[f"{e}-{w}" for e, w in WAYS])
async def test_a_quiet_command_keeps_the_client_hearing_and_a_cancel_ends_its_tree(
    worktree: Path, engine: str, where: str
) -> None:
    async with served(worktree, engine, where) as client:
        # 2.5 s of silence between two lines: the heartbeat repeats the latest line.
        await client.send(bash(1, "echo first; sleep 2.5; echo last", token="beat"))
        answer = await client.answer(1)
        assert answer["result"]["content"][0]["text"] == "first\nlast\n", answer
        answered_at = next(at for at, m in client.seen if m is answer)
        notes = client.progress("beat")
        assert all(at <= answered_at for at, _ in notes)  # none after the answer
        counts = [note["progress"] for _, note in notes]
        assert counts == list(range(1, len(counts) + 1)), counts
        quiet = [at for at, note in notes if note["message"] == "first"]
        gaps = [later - earlier for earlier, later in itertools.pairwise(quiet)]
        assert len(quiet) >= 3, notes  # the line itself, then at least two heartbeats
        assert max(gaps) < HEARTBEAT_SECONDS + 0.5, gaps  # loaded machine: some slack

        # Without a progress token: no notification at all.
        await client.send(bash(2, "sleep 1.2; echo quiet"))
        await client.answer(2)
        assert not [m for _, m in client.seen if m.get("method") == "notifications/progress"
                    and m["params"]["progressToken"] != "beat"]  # fmt: skip

        command, token = long_command()
        await client.send(bash(3, command, token="cancel-me"))
        pids = await asyncio.to_thread(wait_for_sleepers, token)
        assert len(pids) == 2, holding(token)
        await client.send({"method": "notifications/cancelled", "params": {"requestId": 3}})
        took = await asyncio.to_thread(seconds_until_gone, token)
        assert took < 1.0, f"{holding(token)} still there after {took:.2f} s"
        await asyncio.sleep(HEARTBEAT_SECONDS)  # what was on its way before the cancel
        heard = len(client.progress("cancel-me"))
        await asyncio.sleep(HEARTBEAT_SECONDS * 1.5)
        assert len(client.progress("cancel-me")) == heard  # the heartbeat ended with it
        # bash's last update of a cancelled call (its "User aborted" note, for an editor)
        # is not sent to the client that withdrew it.
        said = [note["message"] for _, note in client.progress("cancel-me")]
        assert "</shell_metadata>" not in said, said
        await client.send({"id": 4, "method": "ping"})
        await client.answer(4)
    assert 3 not in {m.get("id") for _, m in client.seen}  # a cancelled call is not answered
