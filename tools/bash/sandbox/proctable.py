"""The process table from /proc: parents, states and start times, and subtrees."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class Stat:
    ppid: int
    pgrp: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart


def table(since: int = 0) -> dict[int, Stat]:
    """Every visible process's parent, group, state and start time (empty without /proc).

    ``since``: only pids from this one up (a command's descendants were started
    after it, so unless pids wrapped around meanwhile, theirs are higher).
    """
    found: dict[int, Stat] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return found
    for name in entries:
        if not name.isdigit() or int(name) < since:
            continue
        stat = _read(int(name))
        if stat is not None:
            found[int(name)] = stat
    return found


def _read(pid: int) -> Stat | None:
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # it exited meanwhile
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _parse(raw)


def _parse(raw: bytes) -> Stat | None:
    # "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime"
    # comm may hold spaces and parentheses: split after its last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return Stat(int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[19]))
    except (IndexError, ValueError):
        return None


def descendants(processes: dict[int, Stat], roots: Iterable[int]) -> dict[int, int]:
    """pid -> start time of every live process below ``roots`` (not the roots)."""
    children: dict[int, list[int]] = {}
    for pid, stat in processes.items():
        children.setdefault(stat.ppid, []).append(pid)
    found: dict[int, int] = {}
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                stat = processes[child]
                if stat.state != "Z":
                    found[child] = stat.start
                stack.append(child)
    return found


def alive(processes: dict[int, Stat], pid: int, start: int) -> bool:
    stat = processes.get(pid)
    return stat is not None and stat.start == start and stat.state != "Z"
