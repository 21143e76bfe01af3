"""The processes a test leaves behind: those that carry its mark in their environment or
its temp folder in their command line (``toolhost mcp --cwd <project>``; codex passes
its MCP servers a short list of variables, not the mark)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def marked(mark: str, folder: str) -> list[int]:
    """Live processes (not this one) with ``mark`` in their environment or ``folder`` in
    their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(") ", 1)[1][:1]
        except (OSError, IndexError):  # gone meanwhile, or not ours
            continue
        if state != "Z" and (mark.encode() in environ or folder.encode() in cmdline):
            found.append(int(entry.name))
    return found


def left_after(mark: str, folder: str, within: float) -> list[int]:
    """What is still there after ``within`` seconds (as soon as nothing is: [])."""
    deadline = time.monotonic() + within
    while (pids := marked(mark, folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def describe(pids: list[int]) -> list[str]:
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            lines.append(f"{pid}: {args.decode(errors='replace')[:200]}")
    return lines


def kill_all(pids: list[int]) -> None:
    """End what a test started and left (only ever its own processes)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fixture's body: every process the test started (the mark is in its environment,
    through any launcher) is gone within a few seconds of its end; any left is ended and
    named."""
    mark = f"left-{secrets.token_hex(8)}"
    monkeypatch.setenv("TOOLHOST_TEST_MARK", mark)
    yield
    left = left_after(mark, str(tmp_path), 10)
    named = describe(left)
    kill_all(left)
    assert not left, f"the test left these running: {named}"
