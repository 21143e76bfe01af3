"""A journal for each disk transaction, so a change killed halfway is undone at next start.

A ``Transaction`` (``tools.changes.transaction``) puts every path back itself when a
step fails, but a process killed with ``kill -9`` (or a power cut) runs no rollback.
So before its first step it writes a journal: what every path held (each file's bytes:
a copy, or for a big file a second name for its old inode, which the write's rename
leaves as it is), what it is about to hold (a hash), and the temp file each write goes
through; it keeps the journal locked (``flock``) while it runs and removes it when it
is done.  ``recover()`` runs when toolhost starts: a journal nobody holds belongs to
a transaction that died, and each of its paths is rolled back:

- a path that holds what the transaction meant to write (or is gone, for a delete)
  gets its original back;
- a path that still holds its original is left alone (the step never ran);
- a path that holds something else was changed by someone after the crash, and is
  left alone too, and reported;
- temp files are removed, and folders the transaction made, once empty.

Layout: ``<data dir>/journal/<id>/journal.json`` plus ``<n>.bak`` per file backed up.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tools.fsio import dirfd
from tools.fsio.held import Held
from tools.truncation import data_dir

log = logging.getLogger("toolhost.journal")

VERSION = 1
Kind = Literal["absent", "file", "symlink", "directory"]


def journal_root() -> Path:
    return data_dir() / "journal"


@dataclass(frozen=True)
class Entry:
    """One path of a transaction: before (``kind``, backup, mode, link) and after."""

    path: Path
    kind: Kind
    mode: int | None = None
    link: str = ""
    backup: str | None = None  # file name of the bytes' copy, for a file
    after: str | None = None  # sha256 of what a write puts there; None: a delete
    temp: str | None = None  # the write's temp file name, in the path's folder
    created_dirs: tuple[Path, ...] = ()  # deepest first

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "mode": self.mode,
            "link": self.link,
            "backup": self.backup,
            "after": self.after,
            "temp": self.temp,
            "createdDirs": [str(d) for d in self.created_dirs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(
            path=Path(data["path"]),
            kind=data["kind"],
            mode=data.get("mode"),
            link=data.get("link") or "",
            backup=data.get("backup"),
            after=data.get("after"),
            temp=data.get("temp"),
            created_dirs=tuple(Path(d) for d in data.get("createdDirs", [])),
        )


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Journal:
    """The journal of one running transaction; ``close`` when it is done (either way)."""

    def __init__(self, folder: Path, lock_fd: int) -> None:
        self.folder = folder
        self._lock_fd = lock_fd

    @property
    def id(self) -> str:
        return self.folder.name

    @classmethod
    def begin(
        cls,
        entries: Sequence[Entry],
        backups: dict[str, bytes | Held],
        txid: str,
        *,
        durable: bool,
    ) -> Journal:
        """Write and lock the journal (backups first, the entries last).

        A backup is the bytes, or the file's inode held open (``Held``): a second name
        for the inode, which the transaction's rename leaves as it is, and no copy.

        ``durable`` flushes it to disk first, so it survives a power cut too; a
        single-file change does not need that (its one rename is all or nothing), and
        a process killed any way leaves the page cache, and so the journal, intact.
        """
        root = journal_root()
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = root / txid
        folder.mkdir(mode=0o700)
        for name, data in backups.items():
            if isinstance(data, Held):
                _keep(folder / name, data, flush=durable)
            else:
                _write(folder / name, data, flush=durable)
        body = {"version": VERSION, "pid": os.getpid(), "entries": [e.to_json() for e in entries]}
        tmp = folder / "journal.json.tmp"
        _write(tmp, json.dumps(body).encode(), flush=durable)
        fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(tmp, folder / "journal.json")  # complete, or not there at all
        if durable:
            _fsync_dir(folder)
        return cls(folder, fd)

    def close(self) -> None:
        """The transaction ended (committed or rolled back): the journal goes."""
        shutil.rmtree(self.folder, ignore_errors=True)
        os.close(self._lock_fd)


def new_id() -> str:
    return f"{os.getpid()}-{secrets.token_hex(6)}"


def recover() -> list[str]:
    """Roll back every transaction that died; one line per thing done or left alone."""
    root = journal_root()
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    report: list[str] = []
    for folder in folders:
        report += _recover_one(folder)
    return report


def _recover_one(folder: Path) -> list[str]:
    journal = folder / "journal.json"
    try:
        fd = os.open(journal, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        # Killed before the journal was complete: nothing was touched yet.
        shutil.rmtree(folder, ignore_errors=True)
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # its transaction is running in another process
        try:
            data = json.loads(os.read(fd, 64 * 1024 * 1024))
            entries = [Entry.from_json(e) for e in data["entries"]]
        except (ValueError, KeyError, TypeError) as error:
            log.error("journal %s is unreadable (%s); left for a person to look at", folder, error)
            return [f"could not read the journal {folder} ({error}); it was left in place"]
        report = []
        for entry in reversed(entries):
            line = _roll_back(folder, entry)
            if line:
                report.append(line)
        shutil.rmtree(folder, ignore_errors=True)
        for line in report:
            log.warning("recovery: %s", line)
        return report
    finally:
        os.close(fd)


def _roll_back(folder: Path, entry: Entry) -> str | None:
    path = entry.path
    if entry.temp:
        with contextlib.suppress(OSError):
            dirfd.unlink(path.parent / entry.temp)
    try:
        now = _state(path)
    except OSError as error:
        return f"{path}: could not be checked ({error.strerror or error}); left as it is"
    line = None
    applied = ("absent",) if entry.after is None else ("file", entry.after)
    if now == _original_state(folder, entry):
        pass  # the step never ran, or was already undone
    elif now == applied:
        try:
            _restore(folder, entry)
            line = f"{path}: put back as it was before an interrupted change"
        except OSError as error:
            return f"{path}: could not be put back ({error.strerror or error})"
    else:
        return f"{path}: changed by someone after an interrupted change; left as it is"
    for directory in entry.created_dirs:
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            dirfd.rmdir(directory)
    return line


def _state(path: Path) -> tuple[Any, ...]:
    info = dirfd.lstat(path)
    if info is None:
        return ("absent",)
    if stat.S_ISLNK(info.st_mode):
        return ("symlink", dirfd.readlink(path))
    if stat.S_ISREG(info.st_mode):
        data, info = dirfd.read_file(path)
        return ("file", digest(data))
    return ("other",)


def _original_state(folder: Path, entry: Entry) -> tuple[Any, ...]:
    if entry.kind == "file" and entry.backup:
        return ("file", digest((folder / entry.backup).read_bytes()))
    if entry.kind == "symlink":
        return ("symlink", entry.link)
    if entry.kind == "directory":
        return ("other",)
    return ("absent",)


def _restore(folder: Path, entry: Entry) -> None:
    path = entry.path
    if entry.kind == "file" and entry.backup:
        data = (folder / entry.backup).read_bytes()
        dirfd.replace(path, data, entry.mode if entry.mode is not None else 0o644)
        return
    if dirfd.lstat(path) is not None:
        dirfd.unlink(path)
    if entry.kind == "symlink":
        dirfd.symlink(entry.link, path)


def _write(path: Path, data: bytes, *, flush: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if flush:
            os.fsync(fd)
    finally:
        os.close(fd)


def _keep(path: Path, held: Held, *, flush: bool) -> None:
    """The held inode under a second name; a copy where the kernel will not link it."""
    try:
        held.link(path)
    except OSError:
        _write(path, held.read(), flush=flush)
        return
    if flush:
        os.fsync(held.fd)  # the linked bytes reach the disk (the folder is flushed after)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
