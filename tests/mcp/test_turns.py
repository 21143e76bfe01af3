"""Turns over MCP (issue 26): a call's ``_meta["toolhost/turn"]`` names its turn, and a
call without one continues the session's turn until the session has been idle for
``checkpoints.idleSeconds`` (30 s; 2 s here), through every door: the lean one, the
SDK's (``TOOLHOST_MCP_ENGINE=sdk``), and attached to an editor's sidecar, both handed
over and forwarded.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import TOOLHOST, mcp_client, text_of
from tests.mcp.test_attach import editor_session, sidecar_lock

IDLE = 2.0
SCRIPT = (("c", None), ("c2", None), "idle", ("e", None), ("a", "t1"), ("b", "t1"), ("d", "t2"))


@pytest.fixture(autouse=True)
def short_idle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The global config (every toolhost the test starts reads it): turns idle after 2 s."""
    folder = tmp_path / "opencode-config"
    folder.mkdir()
    (folder / "opencode.json").write_text(json.dumps({"checkpoints": {"idleSeconds": IDLE}}))
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(folder))


async def three_turns(root: Path, *args: str, env: dict[str, str]) -> None:
    """``c`` and ``c2`` with no turn, a pause, ``e`` with none, then ``a`` and ``b`` in
    turn t1, then ``d`` in t2."""
    async with mcp_client(root, *args, env=env) as client:
        for step in SCRIPT:
            if step == "idle":
                await asyncio.sleep(IDLE + 0.1)  # the idle time is what is tested
                continue
            name, turn = step
            meta: Any = {"toolhost/turn": turn} if turn else None
            args_ = {"filePath": str(root / f"{name}.txt"), "content": f"{name}\n"}
            done = await client.call_tool("write", args_, meta=meta)
            assert not done.is_error, text_of(done)


def turns_of(root: Path, data: Path) -> list[tuple[str, list[str]]]:
    listed = subprocess.run(
        [str(TOOLHOST), "undo", "--list", "--json", "--cwd", str(root)],
        env={**env_of(data)},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = json.loads(listed.stdout)["checkpoints"]
    return [(c["turnID"], sorted(f["path"] for f in c["files"])) for c in found]


def env_of(data: Path) -> dict[str, str]:
    import os

    return {**os.environ, "TOOLHOST_DATA_DIR": str(data)}


def assert_three_turns(found: list[tuple[str, list[str]]]) -> None:
    (first, c), (second, e), *named = found
    assert first.startswith("turn_") and c == ["c.txt", "c2.txt"], found  # one turn
    assert second.startswith("turn_") and second != first and e == ["e.txt"], found  # idle
    assert named == [("t1", ["a.txt", "b.txt"]), ("t2", ["d.txt"])], found


@pytest.mark.parametrize("engine", ["lean", "sdk"])
async def test_a_calls_meta_names_its_turn_through_both_doors(worktree: Path, engine: str) -> None:
    data = worktree.parent / "toolhost-data"
    env = {"TOOLHOST_DATA_DIR": str(data), "TOOLHOST_MCP_ENGINE": engine}
    await three_turns(worktree, "--no-attach", env=env)
    assert_three_turns(turns_of(worktree, data))


@pytest.mark.parametrize("handover", ["1", "0"], ids=["handed-over", "forwarded"])
async def test_attached_a_calls_meta_names_its_turn_in_the_editors_sidecar(
    worktree: Path, handover: str
) -> None:
    data = worktree.parent / "toolhost-data"  # the editor's sidecar's (serve_to)
    async with editor_session(worktree):
        await sidecar_lock(worktree)
        await three_turns(worktree, env={"TOOLHOST_MCP_HANDOVER": handover})
    assert_three_turns(turns_of(worktree, data))
