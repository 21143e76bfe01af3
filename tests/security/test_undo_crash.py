"""An undo killed with SIGKILL at any step is finished at the next start.

A real turn (bash through the sandbox's capture) changes six paths of every kind;
each round forks a child that restores it and kills itself at the N-th file-system
call of the restore; the parent then runs what a start runs and checks the six
paths: every one as before the turn, or every one as the turn left it. Without the
recovery, the same kills leave the undo half done.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.wire.conftest import TOOLHOST, server_env
from tools.checkpoints import restore
from tools.checkpoints.store import read_json
from tools.host import ToolHost

INSTRUMENTED = ("replace", "rename", "unlink", "rmdir", "mkdir", "chmod", "symlink", "open")
COMMAND = (
    "echo A > a.txt && rm b.txt && mkdir -p n/m && echo N > n/m/f && ln -s a.txt l && "
    "chmod 700 s.sh"
)


def state(root: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in ("a.txt", "b.txt", "n", "n/m", "n/m/f", "l", "s.sh"):
        path = root / name
        if path.is_symlink():
            found[name] = ("link", os.readlink(path))
        elif path.is_dir():
            found[name] = ("dir",)
        elif path.exists():
            found[name] = ("file", path.read_text(), path.stat().st_mode & 0o777)
        else:
            found[name] = None
    return found


def before(root: Path) -> None:
    for name in ("n", "l"):
        path = root / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    (root / "s.sh").write_text("#!/bin/sh\n")
    (root / "s.sh").chmod(0o644)


def after(root: Path) -> None:
    """The worktree exactly as the turn left it."""
    before(root)
    (root / "a.txt").write_text("A\n")
    (root / "b.txt").unlink()
    (root / "n" / "m").mkdir(parents=True)
    (root / "n" / "m" / "f").write_text("N\n")
    (root / "l").symlink_to("a.txt")
    (root / "s.sh").chmod(0o700)


@pytest.fixture
def turn(worktree: Path) -> tuple[ToolHost, str, dict[str, Any], dict[str, Any]]:
    before(worktree)
    was = state(worktree)
    host = ToolHost(worktree)
    result = asyncio.run(host.execute("bash", {"command": COMMAND}, session_id="ses_crash"))
    assert not result.is_error, result.output
    host.checkpoints.end("ses_crash")
    (entry,) = host.checkpoints.entries()
    return host, entry["id"], was, state(worktree)


def restore_in_child(host: ToolHost, checkpoint: str, kill_at: int | None) -> tuple[int, int]:
    """(signal that ended it or 0, calls counted)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        counter = [0]
        code = 0
        try:
            for name in INSTRUMENTED:
                real: Callable[..., Any] = getattr(os, name)

                def counted(*args: Any, _real: Callable[..., Any] = real, **kw: Any) -> Any:
                    counter[0] += 1
                    if counter[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return _real(*args, **kw)

                setattr(os, name, counted)
            host.checkpoints.restore(checkpoint)
        except BaseException:
            code = 2
        finally:
            os.write(write, str(counter[0]).encode())
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        counted = int(pipe.read() or 0)
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status), counted
    assert os.WEXITSTATUS(status) == 0, "the restore failed in the child"
    return 0, counted


def reset(host: ToolHost, root: Path) -> None:
    """Back to the turn's end: its state, and no undo checkpoint of an earlier round."""
    after(root)
    for folder in host.checkpoints.store.glob("chk_*"):
        meta = read_json(folder / "meta.json")
        if isinstance(meta, dict) and meta.get("kind") == "restore":
            shutil.rmtree(folder)
    for temp in root.rglob("*.toolhost-restore"):
        temp.unlink()


def kill_points(host: ToolHost, checkpoint: str, root: Path) -> list[int]:
    signal_, total = restore_in_child(host, checkpoint, None)
    assert signal_ == 0 and total > 10
    reset(host, root)
    return list(range(1, total + 1))


def test_kills_leave_half_done_undos_without_recovery(turn: Any, worktree: Path) -> None:
    host, checkpoint, was, done = turn
    half = 0
    for point in kill_points(host, checkpoint, worktree)[::3]:
        restore_in_child(host, checkpoint, point)
        half += state(worktree) not in (was, done)
        reset(host, worktree)
    assert half > 0  # the attack works: a kill -9 halfway leaves an undo half done


def test_every_kill_is_finished_by_the_next_start(turn: Any, worktree: Path) -> None:
    host, checkpoint, was, done = turn
    finished = untouched = 0
    for point in kill_points(host, checkpoint, worktree):
        killed, _ = restore_in_child(host, checkpoint, point)
        assert killed == signal.SIGKILL
        restore.recover()  # what the next start does
        now = state(worktree)
        assert now in (was, done), f"half undone after a kill at call {point}: {now}"
        assert not list(worktree.rglob("*.toolhost-restore"))
        assert not list(host.checkpoints.store.glob(f"*/{restore.JOURNAL}"))
        finished += now == was
        untouched += now == done
        reset(host, worktree)
    assert finished > 0


# `toolhost undo` runs the restore's recovery itself; every other command (serve too)
# through tools.worktree.recover_interrupted_changes, which imports it only when a restore
# journal was left behind.
@pytest.mark.parametrize("command", [["undo", "--list"], ["list"]])
def test_the_next_toolhost_start_finishes_a_killed_undo(
    turn: Any, worktree: Path, command: list[str]
) -> None:
    import subprocess

    host, checkpoint, was, done = turn
    points = kill_points(host, checkpoint, worktree)
    for point in points[len(points) // 2 :]:
        restore_in_child(host, checkpoint, point)
        if state(worktree) not in (was, done):
            break
        reset(host, worktree)
    assert state(worktree) not in (was, done)
    assert list(host.checkpoints.store.glob(f"*/{restore.JOURNAL}"))
    # `toolhost undo` starts as every toolhost does: with the recovery (serve too).
    listed = subprocess.run(
        [str(TOOLHOST), *command, "--cwd", str(worktree)],
        capture_output=True,
        text=True,
        env=server_env(Path(os.environ["TOOLHOST_DATA_DIR"])),
        check=True,
    )
    assert "interrupted undo, finished" in listed.stderr
    assert state(worktree) == was
