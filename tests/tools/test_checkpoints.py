"""Checkpoints in-process: retention, the config key, turns by id and by idle time."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from tools.checkpoints import turns
from tools.config.opencode import read_opencode
from tools.host import ToolHost


def turn_in(host: ToolHost, session: str, name: str) -> str:
    result = asyncio.run(
        host.execute("bash", {"command": f"echo {name} > {name}.txt"}, session_id=session)
    )
    assert not result.is_error, result.output
    host.checkpoints.end(session)
    return host.checkpoints.entries(session)[-1]["id"]


def age(host: ToolHost, checkpoint: str, days: float) -> None:
    meta = host.checkpoints.store / checkpoint / "meta.json"
    data = json.loads(meta.read_text())
    data["time"] = time.time() - days * 86400
    meta.write_text(json.dumps(data))


def test_old_and_oversized_checkpoints_go_but_never_this_sessions(worktree: Path) -> None:
    earlier = ToolHost(worktree)  # another, finished session (another process's)
    old = turn_in(earlier, "ses_old", "old")
    kept = turn_in(earlier, "ses_other", "kept")
    host = ToolHost(worktree)
    mine = turn_in(host, "ses_mine", "mine")
    age(earlier, old, 30)
    age(host, mine, 30)  # as old, but this process's session
    assert host.checkpoints.prune() == [old]
    host.checkpoints.max_bytes = 1  # everything is over the limit now
    assert host.checkpoints.prune() == [kept]
    assert [e["id"] for e in host.checkpoints.entries()] == [mine]


def test_the_config_sets_retention_and_a_mistake_is_named(worktree: Path) -> None:
    layer, errors = read_opencode({"checkpoints": {"maxAgeDays": 2, "maxBytes": 10, "outsde": 1}})
    assert layer.checkpoints == {"max_age_days": 2.0, "max_bytes": 10}
    assert [str(e) for e in errors] == [
        "checkpoints.outsde: unknown key; did you mean 'outside'? (a misspelt key would be ignored)"
    ]
    settings = {"checkpoints": {"maxAgeDays": 2, "idleSeconds": 5}}
    (worktree / "opencode.json").write_text(json.dumps(settings))
    from tools.worktree import open_worktree

    host, _ = open_worktree(worktree)
    assert (host.checkpoints.max_age_days, host.checkpoints.idle_seconds) == (2.0, 5.0)


def test_calls_without_a_turn_id_are_one_turn_until_the_session_is_idle(
    worktree: Path, monkeypatch: object
) -> None:
    host = ToolHost(worktree)
    first = host.checkpoints.turn_for("ses")
    assert host.checkpoints.turn_for("ses") is first
    assert host.checkpoints.turn_for("ses", "t9") is not first  # a named turn begins
    named = host.checkpoints.turn_for("ses", "t9")
    named.last -= turns.IDLE_SECONDS + 1
    assert host.checkpoints.turn_for("ses", "t9") is named  # the same id: the same turn
    named.last -= turns.IDLE_SECONDS + 1
    assert host.checkpoints.turn_for("ses") is not named  # idle: a new one


def test_an_empty_worktrees_first_turn_sees_a_file_made_outside(worktree: Path) -> None:
    """The first scan of a folder with no files kept no copy (no baseline folder yet)."""
    host = ToolHost(worktree, track_outside=True)
    turn = host.checkpoints.begin("ses", "t1", "")
    assert turn._scan is not None
    turn._scan.join()
    assert turn.baseline == {}
    (worktree / "made.txt").write_text("by a script\n")
    checkpoint = host.checkpoints.end("ses", "t1", offer=False)
    assert checkpoint is not None
    (entry,) = host.checkpoints.entries("ses")
    assert [(f["path"], f["action"]) for f in entry["outside"]] == [("made.txt", "created")]
    assert host.checkpoints.end("ses", "t1") is None  # ended already
