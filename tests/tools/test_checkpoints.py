"""Checkpoints in-process: retention, the config key, turns by id and by idle time."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest

from tools.checkpoints import outside, turns
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


def test_a_change_made_before_the_first_scan_reached_it_is_still_found(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load the first scan can reach a file after the agent changed it (a prompt
    waits for the scan only so long): the change must not be taken as the start."""
    (worktree / "edited.txt").write_text("before\n")
    (worktree / "touched.txt").write_text("same\n")
    (worktree / "gone.txt").write_text("removed in the turn\n")
    (worktree / "old").mkdir()
    (worktree / "old" / "earlier.txt").write_text("removed before the turn\n")
    host = ToolHost(worktree, track_outside=True)
    warm = host.checkpoints.begin("ses", "t0", "")  # a scan of the files as they are
    assert warm._scan is not None
    warm._scan.join()
    host.checkpoints.end("ses", "t0", offer=False)
    (worktree / "old" / "earlier.txt").unlink()  # between the turns
    time.sleep(0.05)  # more than a clock tick before the turn begins

    listing = outside.list_files
    reached = threading.Event()

    def late_listing(folder: Path) -> list[str]:
        reached.wait(10)  # the agent writes first
        return listing(folder)

    monkeypatch.setattr(outside, "list_files", late_listing)
    turn = host.checkpoints.begin("ses", "t1", "")
    (worktree / "edited.txt").write_text("after\n")
    (worktree / "made.txt").write_text("new\n")
    (worktree / "gone.txt").unlink()
    os.link(worktree / "touched.txt", worktree / ".touched-link")  # its ctime only
    (worktree / ".touched-link").unlink()
    reached.set()
    assert turn._scan is not None
    turn._scan.join()
    monkeypatch.setattr(outside, "list_files", listing)
    assert host.checkpoints.end("ses", "t1", offer=False) is not None
    (entry,) = [e for e in host.checkpoints.entries("ses") if e["turnID"] == "t1"]
    found = {f["path"]: (f["action"], f.get("undoable", True)) for f in entry["outside"]}
    # Created in the turn: absent at its start, so undo may remove it. Changed in it:
    # what it held before is not known, so it is listed to keep, never undone wrongly.
    assert found == {
        "made.txt": ("created", True),
        "edited.txt": ("modified", False),
        "gone.txt": ("deleted", False),
    }


def hold_listings(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Every scan's listing of the worktree waits (at most 10 s) until the event is set:
    a scan that reaches the folder late, as under load."""
    listing = outside.list_files
    reached = threading.Event()

    def late_listing(folder: Path) -> list[str]:
        reached.wait(10)
        return listing(folder)

    monkeypatch.setattr(outside, "list_files", late_listing)
    return reached


def test_what_was_written_just_before_a_turn_began_is_not_the_turns(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the person writes just before the next prompt (within a clock tick) stays
    theirs, even when the turn's first scan reaches it late: taken for one the turn
    made, the turn's undo deleted it. What the turn writes right away is still its."""
    host = ToolHost(worktree, track_outside=True)
    reached = hold_listings(monkeypatch)
    (worktree / "mine.txt").write_text("the person's, just before the prompt\n")
    turn = host.checkpoints.begin("ses", "t1", "")
    (worktree / "made.txt").write_text("the agent's own tool, at once\n")
    reached.set()
    assert turn._scan is not None
    turn._scan.join()
    assert host.checkpoints.end("ses", "t1", offer=False) is not None
    (entry,) = host.checkpoints.entries("ses")
    assert [(f["path"], f["action"]) for f in entry["outside"]] == [("made.txt", "created")]


def test_a_turn_ended_by_the_next_is_closed_at_the_next_ones_start(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn ended by the next one's begin is summed up in a thread: its end is the next
    turn's start, not whenever that thread scans. Scanned late, it took the next turn's
    changes for its own (offered them for review, undid them with itself)."""
    host = ToolHost(worktree, track_outside=True)
    first = host.checkpoints.begin("ses", "t1", "")
    assert first._scan is not None
    first._scan.join()
    (worktree / "mine.txt").write_text("during t1, outside toolhost\n")
    reached = hold_listings(monkeypatch)
    host.checkpoints.begin("ses", "t2", "")  # t1 ends: its summary is written apart
    (worktree / "later.txt").write_text("t2's agent, outside toolhost\n")
    reached.set()
    host.checkpoints.end("ses", "t2", offer=False)
    for _ in range(400):  # t1's summary, written apart (its entry may not exist yet)
        entries = host.checkpoints.entries()
        if {e["turnID"] for e in entries} >= {"t1", "t2"} and not any(e["open"] for e in entries):
            break
        time.sleep(0.025)
    outside_of = {
        e["turnID"]: [f["path"] for f in e["outside"]] for e in host.checkpoints.entries()
    }
    assert outside_of == {"t1": ["mine.txt"], "t2": ["later.txt"]}


def test_a_turn_heard_of_late_owns_what_changed_since_its_prompt(worktree: Path) -> None:
    """``toolhost acp`` relays a prompt after at most 3 s: a busy sidecar can begin the
    turn after the agent wrote. ``since`` (when the prompt arrived) dates the turn."""
    host = ToolHost(worktree, track_outside=True)
    prompted = time.time()
    time.sleep(0.05)
    (worktree / "early.txt").write_text("written before the sidecar heard\n")
    turn = host.checkpoints.begin("ses", "t1", "", since=prompted)
    assert turn._scan is not None
    turn._scan.join()
    assert host.checkpoints.end("ses", "t1", offer=False) is not None
    (entry,) = host.checkpoints.entries("ses")
    assert [(f["path"], f["action"]) for f in entry["outside"]] == [("early.txt", "created")]
    # Never further back than a minute: a client cannot date a turn to last week.
    old = host.checkpoints.begin("ses", "t2", "", since=prompted - 86400)
    assert old.since is not None and old.started - old.since == turns.SINCE_AT_MOST


def test_a_save_of_exactly_what_the_edit_wrote_does_not_block_its_undo(worktree: Path) -> None:
    """The edit's write is known as toolhost's by the hash its transaction computed (not
    hashed again): the editor saving that same text is not the person's work to keep."""
    host = ToolHost(worktree)
    target = worktree / "kept.txt"
    target.write_text("alpha\nbeta\n")
    session = "ses_saved"

    async def edit() -> None:
        read = await host.execute("read", {"filePath": str(target)}, session_id=session)
        assert not read.is_error, read.output
        args = {"filePath": str(target), "oldString": "beta", "newString": "gamma"}
        result = await host.execute("edit", args, session_id=session)
        assert not result.is_error, result.output

    asyncio.run(edit())
    host.checkpoints.saved(str(target))  # the editor saved the buffer holding the edit
    host.checkpoints.end(session)
    checkpoint = host.checkpoints.entries(session)[-1]["id"]
    answer = host.checkpoints.restore(checkpoint)
    assert answer["skipped"] == []
    assert target.read_text() == "alpha\nbeta\n"
