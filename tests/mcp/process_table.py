"""The process table, for tests that a command's whole tree ended: every process whose
command line holds a token only that command's processes carry."""

from __future__ import annotations

import secrets
import time
from pathlib import Path


def long_command(seconds: int = 600) -> tuple[str, str]:
    """A bash command line that prints ``started`` and then waits, with a job of its own
    left behind by a double fork (``(sleep &)``: out of its process group and its parent
    links), and the token each of its ``sleep`` processes carries in its arguments."""
    token = f"{seconds}.{secs_digits()}"
    return f"echo started; (sleep {token}1 &); sleep {token}2", token


def secs_digits() -> str:
    return str(secrets.randbelow(10**8)).zfill(8)


def holding(token: str) -> list[int]:
    """The pids whose command line contains ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if token.encode() in cmdline:
            found.append(int(entry.name))
    return found


def sleepers(token: str) -> list[int]:
    """The ``sleep`` processes of ``long_command``'s token."""
    found = []
    for pid in holding(token):
        try:
            program = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if program.rsplit(b"/", 1)[-1] == b"sleep":
            found.append(pid)
    return found


def wait_for_sleepers(token: str, within: float = 30.0) -> list[int]:
    """Both ``sleep`` processes of ``long_command`` (fewer if they never come)."""
    deadline = time.monotonic() + within
    while len(pids := sleepers(token)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    return pids


def seconds_until_gone(token: str, within: float = 10.0) -> float:
    """How long until no process holds ``token`` (``within`` + if some never go)."""
    start = time.monotonic()
    while holding(token):
        if time.monotonic() - start > within:
            return float("inf")
        time.sleep(0.01)
    return time.monotonic() - start
