"""Two ``toolhost acp`` of the same agent started at once under one HOME (codecompanion
opens two connections at once) start their agents one after the other: the second
waits until the first has answered ``initialize``.  The scripted agent's first start
makes a state file, and a second start meanwhile exits "database is locked", as
OpenCode 1.18's did on a fresh HOME."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from tests.acp.client import AcpClient, proxy, stderr_of
from tests.acp.test_proxy import AGENT, agent_env


async def open_session(client: AcpClient, project: Path) -> str:
    await client.initialize()
    return await client.new_session(project)


async def test_two_first_starts_at_once_under_one_home_both_work(
    project: Path, tmp_path: Path
) -> None:
    env = {**agent_env(tmp_path), "SCRIPTED_AGENT_SETUP": str(tmp_path / "home" / "state.db")}
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(proxy(AGENT, project, env, folder))
            for folder in (first, second)
        ]
        sessions = await asyncio.gather(
            *(open_session(client, project) for client in clients), return_exceptions=True
        )
    logs = stderr_of(first) + stderr_of(second)
    assert all(isinstance(s, str) for s in sessions), (sessions, logs)
    assert "database is locked" not in logs
    assert (tmp_path / "home" / "state.db").read_text() == "set up\n"
