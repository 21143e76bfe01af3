"""A racing symlink cannot take a file tool outside the project.

The attack (issue #12): while the agent writes ``d/fN.txt``, another process flips
``d`` between a link to a folder inside the project and one to a folder outside.
Every ``external_directory`` ask is rejected, so only writes that were checked while
``d`` pointed inside are allowed; before the fix, the write then resolved ``d`` again
and a quarter of the files landed outside.

With the defence off (the checked path not pinned: I/O resolves the path again, as
before) the race is shown to put files outside; with it on, 0 of 300 do, for writes
and for reads.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tools.fsio import openat2
from tools.fsio.paths import Pins
from tools.host import ToolHost

ROUNDS = 300


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    worktree = tmp_path / "ws"
    inside = worktree / "inner"
    outside = tmp_path / "outside"
    inside.mkdir(parents=True)
    outside.mkdir()
    (worktree / "d").symlink_to(inside)
    return worktree, inside, outside


@contextmanager
def flipping(link: Path, targets: tuple[Path, Path]) -> Iterator[None]:
    """Swap ``link`` between the two targets as fast as possible, each swap atomic."""
    stop = threading.Event()

    def flip() -> None:
        spare = link.with_name(".flip")
        n = 0
        while not stop.is_set():
            n += 1
            if os.path.lexists(spare):
                os.unlink(spare)
            os.symlink(targets[n % 2], spare)
            os.rename(spare, link)

    thread = threading.Thread(target=flip, daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # let the flipper run between any two steps of a call
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


async def race_writes(
    worktree: Path, inside: Path, outside: Path, rounds: int = ROUNDS, until_outside: bool = False
) -> tuple[int, int]:
    host = ToolHost(worktree, read_before_write=False)
    editor = RecordingEditor(reply="reject")  # every external_directory ask is rejected
    with flipping(worktree / "d", (inside, outside)):
        for n in range(rounds):
            await host.execute("write", {"filePath": f"d/f{n}.txt", "content": "x"}, editor=editor)
            if until_outside and any(outside.iterdir()):
                break
    return len(list(outside.iterdir())), len(list(inside.glob("f*.txt")))


async def race_reads(
    worktree: Path, inside: Path, outside: Path, rounds: int = ROUNDS, until_leak: bool = False
) -> tuple[int, int]:
    (inside / "secret.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    host = ToolHost(worktree)
    editor = RecordingEditor(reply="reject")
    leaked = served = 0
    with flipping(worktree / "d", (inside, outside)):
        for _ in range(rounds):
            result = await host.execute("read", {"filePath": "d/secret.txt"}, editor=editor)
            leaked += "OUTSIDE-SECRET" in result.output
            served += "inside" in result.output
            if until_leak and leaked:
                break
    return leaked, served


@pytest.fixture(params=["openat2", "walk"])
def opening(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a checked path is opened: one openat2 that follows no link, and the
    folder-by-folder walk used where the kernel has no openat2."""
    if request.param == "walk":
        monkeypatch.setattr(openat2, "_call", None)
    return str(request.param)


def defence_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checked path is not pinned: every I/O resolves the path again (the old code)."""
    monkeypatch.setattr(Pins, "real_text", lambda self, path: os.path.realpath(path))


async def test_racing_writes_land_outside_without_the_defence(
    layout: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    defence_off(monkeypatch)
    # Stops at the first file outside (a busy machine may need more rounds to hit the window).
    outside_count, _ = await race_writes(*layout, rounds=20 * ROUNDS, until_outside=True)
    assert outside_count > 0  # the attack works: a marker file is outside


async def test_0_of_300_racing_writes_land_outside(
    layout: tuple[Path, Path, Path], opening: str
) -> None:
    outside_count, inside_count = await race_writes(*layout)
    assert outside_count == 0
    assert inside_count > 0  # the race was live: writes checked inside went through
    refused = ROUNDS - inside_count
    print(f"\nwrites ({opening}): {inside_count} inside, 0 outside, {refused} refused")


async def test_racing_reads_leak_without_the_defence(
    layout: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    defence_off(monkeypatch)
    leaked, _ = await race_reads(*layout, rounds=20 * ROUNDS, until_leak=True)
    assert leaked > 0


async def test_0_of_300_racing_reads_return_the_outside_file(
    layout: tuple[Path, Path, Path], opening: str
) -> None:
    leaked, served = await race_reads(*layout)
    assert leaked == 0
    assert served > 0
    print(f"\nreads ({opening}): {served} served the inside file, 0 the outside one")
