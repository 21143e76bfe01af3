"""A 5-file patch killed with SIGKILL at any step is whole or not at all after a restart.

Each round forks a child that applies the patch through the real ``apply_patch`` tool
and kills itself (``SIGKILL``, so no rollback runs) at the N-th file-system call of a
chosen kind; the parent then runs what a start runs (``journal.recover``) and checks
the five files: every one as before, or every one as patched, and no temp file or
journal left.  Without the recovery, the same kills leave patches half applied.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.wire.conftest import run_toolhost
from tools.changes import journal, transaction
from tools.host import ToolHost

ROUNDS = 300
# The calls a kill can land on: every step of the journal and of each file's write.
INSTRUMENTED = ("open", "write", "fsync", "fchmod", "rename", "unlink", "mkdir", "rmdir", "link")

BEFORE = {
    "a.txt": "alpha\n",
    "b.txt": "beta\n",
    "c.txt": "gamma\n",
    "gone.txt": "delete me\n",
    "new/deep/d.txt": None,
}
AFTER = {
    "a.txt": "ALPHA\n",
    "b.txt": "BETA\n",
    "c.txt": "GAMMA\n",
    "gone.txt": None,
    "new/deep/d.txt": "delta\n",
}
PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Update File: b.txt
@@
-beta
+BETA
*** Add File: new/deep/d.txt
+delta
*** Update File: c.txt
@@
-gamma
+GAMMA
*** Delete File: gone.txt
*** End Patch"""


def prepare(root: Path) -> None:
    for name, text in BEFORE.items():
        path = root / name
        if text is not None:
            path.write_text(text)
        elif path.exists():
            path.unlink()
    for folder in (root / "new" / "deep", root / "new"):
        if folder.exists() and not any(folder.iterdir()):
            folder.rmdir()


def state(root: Path) -> dict[str, str | None]:
    return {name: (root / name).read_text() if (root / name).exists() else None for name in BEFORE}


def leftovers(root: Path) -> list[str]:
    temps = [str(p) for p in root.rglob("*.toolhost")]
    return temps + [str(p) for p in journal.journal_root().glob("*")]


def instrument(kill_at: int | None, counter: list[int]) -> None:
    """In the child: count the calls; SIGKILL this process at call number ``kill_at``."""
    for name in INSTRUMENTED:
        real: Callable[..., Any] = getattr(os, name)

        def counted(*args: Any, _real: Callable[..., Any] = real, **kwargs: Any) -> Any:
            counter[0] += 1
            if counter[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return _real(*args, **kwargs)

        setattr(os, name, counted)


def apply_in_child(root: Path, kill_at: int | None, hold: bool = False) -> tuple[int, int, int]:
    """Fork, apply the patch in the child. ``hold``: every file's old inode is held open
    and linked as the journal's backup, as a big file's is (``transaction.HOLD_BYTES``).

    ``(signal that ended it or 0, calls counted, calls before the journal began)``.
    """
    ToolHost(root)  # import every tool before forking, so each child starts at once
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        counter = [0]
        began = [0]
        begin = journal.Journal.begin.__func__  # type: ignore[attr-defined]

        def marked(cls: Any, *args: Any, **kwargs: Any) -> Any:
            began[0] = counter[0]
            return begin(cls, *args, **kwargs)

        journal.Journal.begin = classmethod(marked)  # type: ignore[method-assign,assignment]
        if hold:
            transaction.HOLD_BYTES = 0
        code = 0
        try:
            host = ToolHost(root, read_before_write=False)
            # A killed process leaves the page cache intact, so flushing to disk changes
            # nothing this test can see; skipping it keeps 300 rounds fast.  The call is
            # still counted: a kill can land just before or after it.
            os.fsync = lambda fd: None
            instrument(kill_at, counter)
            result = asyncio.run(host.execute("apply_patch", {"patchText": PATCH}))
            code = 1 if result.is_error else 0
        except BaseException:
            code = 2
        finally:
            os.write(write, f"{counter[0]} {began[0]}".encode())
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        counted, began = (int(n) for n in (pipe.read() or "0 0").split())
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status), counted, began
    assert os.WEXITSTATUS(status) == 0, f"the patch failed in the child ({status})"
    return 0, counted, began


@pytest.fixture
def root(worktree: Path) -> Path:
    prepare(worktree)
    return worktree


def kill_points(root: Path, hold: bool = False, rounds: int = ROUNDS) -> list[int]:
    """``rounds`` points spread over every call from the journal's first write to the end.

    (Before it, the patch is only being planned: nothing on disk has changed yet.)
    """
    apply_in_child(root, None)  # once first: it makes the data dir's folders (checkpoints)
    prepare(root)
    signal_, total, began = apply_in_child(root, None, hold)
    assert signal_ == 0 and state(root) == AFTER and 0 < began < total
    prepare(root)
    return [began + 1 + (n * (total - began)) // rounds for n in range(rounds)]


def test_kills_leave_half_applied_patches_without_recovery(root: Path) -> None:
    half = 0
    for point in kill_points(root)[::10]:
        apply_in_child(root, point)
        if state(root) not in (BEFORE, AFTER):
            half += 1
        prepare(root)
        for folder in journal.journal_root().glob("*"):  # what recovery would have used
            for file in folder.iterdir():
                file.unlink()
            folder.rmdir()
        for temp in root.rglob("*.toolhost"):
            temp.unlink()
    assert half > 0  # the attack works: a kill -9 halfway leaves a patch half applied


@pytest.mark.parametrize(
    ("hold", "rounds"), [(False, ROUNDS), (True, ROUNDS // 3)], ids=["copies", "held-inodes"]
)
def test_0_half_applied_patches_after_300_kills(root: Path, hold: bool, rounds: int) -> None:
    """Also with the old inodes held open and linked as the journal's backups (what a big
    file gets): the link lands before the rename, and the held inode is what is put back."""
    killed = whole = undone = half_before = 0
    for point in kill_points(root, hold, rounds):
        signal_, _, _ = apply_in_child(root, point, hold)
        killed += signal_ == signal.SIGKILL
        half_before += state(root) not in (BEFORE, AFTER)
        journal.recover()  # what the next start does
        now = state(root)
        assert now in (BEFORE, AFTER), f"half applied after a kill at call {point}: {now}"
        assert leftovers(root) == [], f"left over after a kill at call {point}"
        whole += now == AFTER
        undone += now == BEFORE
        prepare(root)
    assert killed == rounds
    print(
        f"\n{rounds} kills: {half_before} left the patch half applied on disk; after recovery "
        f"{undone} rolled back, {whole} complete, 0 half applied"
    )


def test_a_start_recovers_and_says_so(root: Path) -> None:
    points = kill_points(root)
    for point in points[len(points) // 2 :]:
        apply_in_child(root, point)
        if state(root) not in (BEFORE, AFTER):
            break
    else:
        pytest.fail("no kill point left the patch half applied")
    data = Path(os.environ["TOOLHOST_DATA_DIR"])  # where the killed child kept its journal
    done = run_toolhost("run", "read", '{"filePath": "a.txt"}', cwd=root, data_dir=data)
    assert state(root) == BEFORE
    assert "put back as it was before an interrupted change" in done.stderr
    assert leftovers(root) == []
