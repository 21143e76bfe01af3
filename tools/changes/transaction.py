"""All-or-nothing changes to several files.

Each file is still written atomically (``fsio.atomic_write``), but a change that
spans files can fail part way: the third file's directory cannot be created, the
disk fills up, the call is cancelled.  A ``Transaction`` remembers what every
path held before it touched it (bytes and mode, a symlink, or nothing) and, when
any step fails, puts every touched path back, removes the files and directories
it created, and reports what went wrong.  A process killed halfway cannot do
that itself: the transaction's journal (``tools.changes.journal``) lets the next
start do it.

Every path is reached as it was checked (``real``: the call's pinned real paths,
``tools.fsio.paths.Pins``) through directory fds that never follow a symlink swapped
in afterwards (``tools.fsio.dirfd``).  A file whose own mode forbids writing it
(``0444``) is refused, never replaced through a rename in its folder.

Blocking: run ``commit`` in a worker thread (``ctx.run_blocking``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tools.changes import journal
from tools.changes.journal import Entry, Journal
from tools.fsio import atomic_write, dirfd, writable
from tools.fsio.held import Held
from tools.fsio.paths import resolve_once

__all__ = ["Transaction", "TransactionFailed"]

log = logging.getLogger("toolhost.tools.changes")

Action = Literal["write", "delete"]
Resolver = Callable[[Path], Path]

# A file this big is held open rather than read before the change (``Held``): its bytes
# are read only for a rollback, and the journal links it instead of copying it. At most
# this many per transaction, so a patch of many big files cannot run out of fds.
HOLD_BYTES = 256 * 1024
HOLD_FILES = 32


@dataclass(frozen=True)
class _Op:
    action: Action
    path: Path
    data: bytes = b""
    mode: int | None = None
    digest: Callable[[], str] | None = None  # a big write's sha256, being taken meanwhile


@dataclass(frozen=True)
class _Original:
    """What a path held before the transaction touched it."""

    path: Path
    kind: Literal["absent", "file", "symlink", "directory"]
    data: bytes = b""  # a file's bytes, unless ``held``
    mode: int | None = None
    link: str = ""
    created_dirs: tuple[Path, ...] = ()  # made for this path, deepest first
    read_only: bool = False  # a file whose own mode forbids writing it
    times_ns: tuple[int, int] | None = None  # a file's (atime, mtime), put back with it
    held: Held | None = None  # a big file's inode, open: its bytes are read when needed

    def content(self) -> bytes:
        return self.held.read() if self.held is not None else self.data


@dataclass(eq=False)
class TransactionFailed(Exception):
    """A step failed; every touched path was put back unless listed in ``unrestored``."""

    action: Action
    path: Path
    reason: str
    cause: BaseException
    restored: list[Path] = field(default_factory=list)
    unrestored: list[tuple[Path, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"could not {self.action} {self.path}: {self.reason}"


class Transaction:
    """Queue writes and deletes, then ``commit`` them all or none."""

    def __init__(
        self, check: Callable[[], None] | None = None, real: Resolver | None = None
    ) -> None:
        # Called before every step; raising (e.g. ``Aborted``) rolls back.
        self._check = check or (lambda: None)
        # Where a path was checked to be (its symlinks resolved then); else resolved now.
        self._real = real or resolve_once
        self._ops: list[_Op] = []
        self._originals: dict[Path, _Original] = {}
        self._order: list[Path] = []
        self._id = journal.new_id()
        self._failed_op: _Op | None = None  # the op whose path could not be looked at
        # sha256 of what each written path (by real path) holds once committed: the journal
        # needs it, and the checkpoints take it from here rather than hash the file again.
        self.written: dict[Path, str] = {}

    def write(self, path: Path, data: bytes, mode: int | None = None) -> None:
        digest = _digest_meanwhile(data) if len(data) >= HOLD_BYTES else None
        self._ops.append(_Op("write", path, data, mode, digest))

    def delete(self, path: Path) -> None:
        self._ops.append(_Op("delete", path))

    @property
    def touched(self) -> list[Path]:
        """Paths changed so far, in the order they were first touched."""
        return list(self._order)

    def commit(self, first: Callable[[], None] | None = None) -> None:
        """Run every step, or none (a failure rolls back); ``close`` once no ``rollback``
        can be wanted any more. ``first`` runs before anything is looked at (while big
        writes' hashes are being taken)."""
        if first is not None:
            first()
        if not self._ops:
            return
        try:
            self._commit()
        except BaseException:
            self.close()  # rolled back already
            raise

    def _commit(self) -> None:
        try:
            self._snapshot_all()
        except (OSError, _Refused) as error:
            op = self._failed_op or self._ops[0]
            raise TransactionFailed(op.action, op.path, _reason(op, error), error) from error
        record = self._begin_journal()
        try:
            for number, op in enumerate(self._ops):
                try:
                    self._check()
                    key = self._key(op)
                    if key not in self._order:
                        self._order.append(key)
                    self._run(op, key, number)
                except BaseException as error:
                    restored, unrestored = self._rollback()
                    if not isinstance(error, OSError | _Refused):
                        raise  # cancellation (``Aborted``) and bugs: rolled back, then passed on
                    raise TransactionFailed(
                        op.action, op.path, _reason(op, error), error, restored, unrestored
                    ) from error
        finally:
            if record is not None:
                record.close()

    def rollback(self) -> tuple[list[Path], list[tuple[Path, str]]]:
        """Undo a committed transaction (a later step of a bigger change failed).

        Returns (paths put back, paths that could not be with why).  Blocking.
        """
        return self._rollback()

    def close(self) -> None:
        """No rollback will be asked for any more: let go of the files held open."""
        for original in self._originals.values():
            if original.held is not None:
                original.held.close()

    # --- before the first step ------------------------------------------------------------

    def _key(self, op: _Op) -> Path:
        # A write goes through a symlink to its target; a delete removes the link itself.
        if op.action == "write":
            return self._real(op.path)
        return self._real(op.path.parent) / op.path.name

    def _snapshot_all(self) -> None:
        """What every path holds now, before anything is touched (the journal needs it)."""
        for op in self._ops:
            self._failed_op = op
            key = self._key(op)
            if key not in self._originals:
                hold = sum(o.held is not None for o in self._originals.values()) < HOLD_FILES
                self._originals[key] = _snapshot(key, creating=op.action == "write", hold=hold)
        self._failed_op = None

    def _begin_journal(self) -> Journal | None:
        entries: dict[Path, Entry] = {}
        backups: dict[str, bytes | Held] = {}
        for number, op in enumerate(self._ops):
            key = self._key(op)
            original = self._originals[key]
            earlier = entries.get(key)
            backup = earlier.backup if earlier else None
            if backup is None and original.kind == "file":
                backup = f"{len(backups)}.bak"
                backups[backup] = original.held or original.data
            if op.action == "write":
                self.written[key] = op.digest() if op.digest else journal.digest(op.data)
            else:
                self.written.pop(key, None)
            entries[key] = Entry(
                path=key,
                kind=original.kind,
                mode=original.mode,
                link=original.link,
                backup=backup,
                after=self.written[key] if op.action == "write" else None,
                temp=dirfd.temp_name(key.name, self._tag(number)) if op.action == "write" else None,
                created_dirs=original.created_dirs,
            )
        if not entries:
            return None
        try:
            durable = len(entries) > 1  # one file: its single rename is all or nothing
            return Journal.begin(list(entries.values()), backups, self._id, durable=durable)
        except OSError as error:  # no journal: the change still rolls back on failure
            log.warning(
                "could not write the journal (%s): a crash during this change would not "
                "be undone at the next start",
                error,
            )
            return None

    def _tag(self, number: int) -> str:
        return f"{self._id}-{number}"

    # --- steps ------------------------------------------------------------------------------

    def _run(self, op: _Op, key: Path, number: int) -> None:
        original = self._originals[key]
        if original.read_only:
            raise _ReadOnly(key, original.mode or 0)
        if op.action == "write":
            atomic_write(op.path, op.data, op.mode, real=key, tag=self._tag(number))
        else:
            info = dirfd.lstat(key)
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(op.path))
            dirfd.unlink(key)

    # --- rollback ---------------------------------------------------------------------------

    def _rollback(self) -> tuple[list[Path], list[tuple[Path, str]]]:
        """Put every touched path back, last first; returns (undone, could not undo)."""
        restored: list[Path] = []
        unrestored: list[tuple[Path, str]] = []
        for key in reversed(self._order):
            try:
                changed = _restore(self._originals[key])
            except OSError as error:
                unrestored.append((key, error.strerror or str(error)))
            else:
                if changed:
                    restored.append(key)
        self._order.clear()
        restored.reverse()
        return restored, unrestored


def _digest_meanwhile(data: bytes) -> Callable[[], str]:
    """The sha256 of ``data``, taken on a thread of its own (hashlib lets go of the GIL) while
    the caller goes on, e.g. the checkpoint copies the file (``commit``'s ``first``)."""
    found: list[str] = []
    thread = threading.Thread(target=lambda: found.append(journal.digest(data)), daemon=True)
    thread.start()

    def wait() -> str:
        thread.join()
        return found[0] if found else journal.digest(data)

    return wait


class _Refused(Exception):
    """A path the transaction will not replace (it could not put it back)."""


class _ReadOnly(PermissionError):
    def __init__(self, path: Path, mode: int) -> None:
        super().__init__(
            errno.EACCES,
            f"it is read-only (mode {mode:04o}): its own permissions do not allow writing it, "
            "so it was not replaced",
            str(path),
        )


def _snapshot(path: Path, *, creating: bool, hold: bool = False) -> _Original:
    try:
        info = dirfd.lstat(path)
    except NotADirectoryError:
        return _Original(path, "absent")  # a parent is a file: the step fails untouched
    if info is None:
        missing = _missing_dirs(path.parent) if creating else ()
        return _Original(path, "absent", created_dirs=missing)
    if stat.S_ISLNK(info.st_mode):
        return _Original(path, "symlink", link=dirfd.readlink(path))
    if stat.S_ISREG(info.st_mode):
        held = None
        if hold and info.st_size >= HOLD_BYTES:
            held = Held.open(path)
            data, info = b"", held.info
        else:
            data, info = dirfd.read_file(path)
        mode = stat.S_IMODE(info.st_mode)
        times = (info.st_atime_ns, info.st_mtime_ns)
        return _Original(
            path, "file", data, mode, read_only=not writable(info), times_ns=times, held=held
        )
    if stat.S_ISDIR(info.st_mode):
        return _Original(path, "directory")  # replacing or unlinking it fails untouched
    raise _Refused(f"{path} is not a regular file")


def _missing_dirs(directory: Path) -> tuple[Path, ...]:
    missing: list[Path] = []
    while directory != directory.parent:
        try:
            info = dirfd.lstat(directory)
        except (NotADirectoryError, dirfd.PathChanged):
            break  # a file or a link in the way: mkdir will fail, nothing is created
        if info is not None:
            break
        missing.append(directory)
        directory = directory.parent
    return tuple(missing)


def _restore(original: _Original) -> bool:
    """Put one path back; False when it already held its original state."""
    if original.kind == "directory":
        return False
    if _unchanged(original):
        return False
    path = original.path
    if original.kind == "file":
        atomic_write(path, original.content(), original.mode, real=path)
        if original.times_ns is not None:
            # Its old timestamp too: an editor holding the file unsaved would otherwise
            # warn on its next save that the file changed since it was read.
            with contextlib.suppress(OSError):
                os.utime(path, ns=original.times_ns, follow_symlinks=False)
        return True
    if dirfd.lstat(path) is not None:
        dirfd.unlink(path)
    if original.kind == "symlink":
        dirfd.symlink(original.link, path)
    for directory in original.created_dirs:
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            dirfd.rmdir(directory)
    return True


def _unchanged(original: _Original) -> bool:
    # Leaves a file the failed step never reached (or never replaced) untouched, mtime included.
    path = original.path
    try:
        info = dirfd.lstat(path)
    except NotADirectoryError:
        info = None
    if info is None:
        return original.kind == "absent" and not any(_exists(d) for d in original.created_dirs)
    if original.kind == "symlink":
        return stat.S_ISLNK(info.st_mode) and dirfd.readlink(path) == original.link
    if original.kind == "file" and stat.S_ISREG(info.st_mode):
        if stat.S_IMODE(info.st_mode) != original.mode:
            return False
        if original.held is not None and original.held.same_file(info):
            return True  # never replaced (a write renames a new file over it)
        return dirfd.read_file(path)[0] == original.content()
    return False


def _exists(path: Path) -> bool:
    try:
        return dirfd.lstat(path) is not None
    except OSError:
        return False


def _reason(op: _Op, error: BaseException) -> str:
    if isinstance(error, OSError):
        blocker = _file_in_the_way(op.path)
        if blocker is not None:
            return f"{blocker} is a file, not a directory"
        return error.strerror or str(error)
    return str(error)


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a directory."""
    for parent in path.parents:
        if os.path.lexists(parent):
            return None if parent.is_dir() else parent
    return None
