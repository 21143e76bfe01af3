"""Changes made outside toolhost during a turn: found by comparing the worktree with
what it held when the turn began.

At a turn's start, ``scan`` lists the worktree's files as ``rg --files`` sees them
(``.gitignore`` respected, ``.git`` left out) with their size, mtime, inode and mode,
and keeps a copy of each file of at most ``MAX_FILE_BYTES`` whose copy is not kept yet
(content-addressed under ``<store>/baseline/``, so a file unchanged between turns is
copied once, ever). At its end, a second scan finds the files that changed; those
toolhost did not write and the person did not save in the editor are the turn's
"changed outside review", undone from those copies. A file larger than the limit is
listed without a copy: it can be kept, not undone.

The first scan can still be running when the agent starts (a prompt waits for it only
so long), so a file it reaches may already hold the agent's change. A file whose last
change (ctime) is after the turn began is not taken as it is: created in the turn (its
birth time says so), it was absent at the start; otherwise what it held then is
unknown, and it is listed without a copy.

"After the turn began" is exact: a file's times lie between the coarse clock (up to a
tick behind) and the wall clock at the change, so a change before the start is dated
before it, and ``wait_for_file_clock`` holds the turn's start until the coarse clock has
passed it, so a change after the start is dated after it. (A margin of a tick instead
took a file the person wrote just before the next prompt for one the next turn made,
and its undo deleted it.)

A scan stats every file, so it runs at a turn's edges in a worker thread, never on a
call's path (``bench/checkpoint_cost.py`` measures it).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tools.checkpoints.store import Before, State, read_json, state_of, write_json
from tools.checkpoints.summary import PathChange
from tools.fsio.birth import born_ns
from tools.fsio.rg import rg_path

MAX_FILE_BYTES = 1 << 20
# What a file changed after its turn began held then is not known: a key no scan gives.
UNKNOWN_AT_START = (-1, -1, -1, -1, "")
_SCANNING = threading.Lock()  # one scan at a time: they share the index and the copies
# Linux's CLOCK_REALTIME_COARSE (not named by Python's ``time``): the floor of every
# file time it gives (fine-grained ones, since 6.13, are between it and the wall clock).
_COARSE_CLOCK = 5 if sys.platform.startswith("linux") else None
_TICK_AT_MOST_S = 0.02  # HZ=100 is 10 ms; a clock set back is not waited for

# path -> (size, mtime_ns, inode, mode, sha256 of the kept copy or "")
Index = dict[str, tuple[int, int, int, int, str]]


@dataclass
class Baseline:
    store: Path  # the worktree's checkpoint folder
    max_file_bytes: int = MAX_FILE_BYTES
    last: Index | None = None  # the last scan (else read from index.json)
    # What the last scan holds is what the files held at this time (wall clock, ns) or
    # before: a turn's first scan (its start), else the end of the scan; None: not known.
    last_as_of_ns: int | None = None

    @property
    def folder(self) -> Path:
        return self.store / "baseline"

    def object_path(self, sha: str) -> Path:
        return self.folder / "objects" / sha[:2] / sha

    def blob_name(self, sha: str) -> str:
        return os.path.relpath(self.object_path(sha), self.store)

    def scan(self, worktree: Path, *, since_ns: int | None = None) -> Index:
        """The worktree now, with a kept copy of every file within the limit.
        ``since_ns``: the turn this scan starts began then (wall clock, ns); a file
        changed after it is recorded as it was at that time, as far as that is known."""
        with _SCANNING:
            return self._scan(worktree, since_ns)

    def _scan(self, worktree: Path, since_ns: int | None) -> Index:
        previous = self.last if self.last is not None else self.load()
        # Its key clears a file changed in the turn of a change of metadata only if it
        # was taken before the turn began (a previous turn's end scanned late was not).
        as_of = self.last_as_of_ns if self.last is not None else None
        trusted = since_ns is not None and as_of is not None and as_of <= since_ns
        index: Index = {}
        for path in list_files(worktree):
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            key = (info.st_size, info.st_mtime_ns, info.st_ino, stat.S_IMODE(info.st_mode))
            known = previous.get(path)
            changed_in_turn = since_ns is not None and info.st_ctime_ns >= since_ns
            # (a file whose key is the last scan's changed only in its metadata)
            if changed_in_turn and (known is None or not trusted or known[:4] != key):
                born = born_ns(path)
                if born is None or since_ns is None or born < since_ns:
                    index[path] = UNKNOWN_AT_START
                # else: made during the turn, so absent at its start (no entry)
                continue
            # Unchanged since the last scan: its copy is kept already (copies go only
            # with the whole baseline, ``remove``).
            sha = known[4] if known is not None and known[:4] == key else None
            if sha is None:
                sha = self._keep(path, info.st_size)
            index[path] = (*key, sha)
        if since_ns is not None:
            index.update(_removed_in_turn(previous.keys() - index.keys(), since_ns))
        self.folder.mkdir(parents=True, exist_ok=True)  # an empty worktree kept no copy
        write_json(self.folder / "index.json", index, compact=True)
        self.last, self.last_as_of_ns = index, since_ns if since_ns is not None else time.time_ns()
        return index

    def load(self) -> Index:
        """The last scan, as written (empty when there is none)."""
        data = read_json(self.folder / "index.json")
        if not isinstance(data, dict):
            return {}
        return {p: tuple(v) for p, v in data.items()}

    def _keep(self, path: str, size: int) -> str:
        if size > self.max_file_bytes:
            return ""
        try:
            with open(path, "rb") as file:
                data = file.read(self.max_file_bytes + 1)
        except OSError:
            return ""
        if len(data) > self.max_file_bytes:
            return ""
        sha = hashlib.sha256(data).hexdigest()
        target = self.object_path(sha)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            temp.write_bytes(data)
            os.replace(temp, target)
        return sha


def wait_for_file_clock(ns: int) -> None:
    """Return once a file changed from now on carries a time of at least ``ns`` (wall
    clock): at most a tick, once per turn. Elsewhere file times are fine-grained."""
    if _COARSE_CLOCK is None:
        return
    deadline = time.monotonic() + _TICK_AT_MOST_S
    while time.clock_gettime_ns(_COARSE_CLOCK) < ns and time.monotonic() < deadline:
        time.sleep(0.0005)


def _removed_in_turn(
    gone: Iterable[str], since_ns: int
) -> dict[str, tuple[int, int, int, int, str]]:
    """Of the files the last scan saw and this one did not, those whose folder changed
    after the turn began: maybe removed in it, holding then what is not known (the last
    scan's copy may be older than the turn)."""
    found = {}
    for path in gone:
        folder = os.path.dirname(path)
        while True:  # the nearest folder still there (the others went with the file)
            try:
                changed_ns = os.lstat(folder).st_ctime_ns
                break
            except OSError:
                folder = os.path.dirname(folder)
        if changed_ns >= since_ns:
            found[path] = UNKNOWN_AT_START
    return found


def changed(before: Index, after: Index) -> list[str]:
    """Paths whose file appeared, went away or changed between two scans."""
    paths = set(before) | set(after)
    return sorted(p for p in paths if (before.get(p) or ())[:4] != (after.get(p) or ())[:4])


def found_in_turn(
    start: Index, end: Index, baseline: Baseline, not_outside: Callable[[str, State], bool]
) -> list[PathChange]:
    """The files that changed between a turn's first scan and its ``end`` (a scan at its
    end, or the next turn's first scan, which dates its edge exactly) that
    ``not_outside`` does not claim (toolhost's own writes, the person's saves)."""
    found = []
    for path in changed(start, end):
        if end.get(path) == UNKNOWN_AT_START:
            continue  # changed after the edge: the next turn's, which lists it
        now = _state_in(path, end)
        if not_outside(path, now):
            continue
        before = before_of(path, start, baseline, 0) or Before(path, "unknown", 0)
        found.append(PathChange(path, before, now, ["outside"], _action(before, now)))
    return found


def _action(before: Before, now: State) -> str:
    if before.kind == "absent":
        return "created"
    return "deleted" if now.kind == "absent" else "modified"


def _state_in(path: str, index: Index) -> State:
    """What ``path`` held when ``index`` was taken (as it is now, when not known)."""
    known = index.get(path)
    if known is None:
        return State("absent")
    return State("file", known[4], known[3]) if known[4] else state_of(path)


def before_of(path: str, before: Index, baseline: Baseline, t: int) -> Before | None:
    """What ``path`` held at the first scan; None when no copy of it was kept."""
    known = before.get(path)
    if known is None:
        return Before(path, "absent", t)
    sha = known[4]
    if not sha:
        return None
    return Before(path, "file", t, mode=known[3], blob=baseline.blob_name(sha))


def list_files(worktree: Path) -> list[str]:
    """The worktree's files as ripgrep lists them (ignore files respected), absolute."""
    try:
        found = subprocess.run(
            [rg_path(), "--files", "--hidden", "--no-config", "--null", "--glob=!.git"],
            cwd=worktree,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    root = os.path.realpath(worktree)
    return [os.path.join(root, os.fsdecode(p)) for p in found.stdout.split(b"\0") if p]


def remove(store: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(store / "baseline")
