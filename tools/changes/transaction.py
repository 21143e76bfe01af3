"""All-or-nothing changes to several files.

Each file is still written atomically (``fsio.atomic_write``), but a change that
spans files can fail part way: the third file's directory cannot be created, the
disk fills up, the call is cancelled.  A ``Transaction`` remembers what every
path held before it first touched it (bytes and mode, a symlink, or nothing)
and, when any step fails, puts every touched path back, removes the files and
directories it created, and reports what went wrong.

Blocking: run ``commit`` in a worker thread (``ctx.run_blocking``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tools.fsio import atomic_write

__all__ = ["Transaction", "TransactionFailed"]

Action = Literal["write", "delete"]


@dataclass(frozen=True)
class _Op:
    action: Action
    path: Path
    data: bytes = b""
    mode: int | None = None


@dataclass(frozen=True)
class _Original:
    """What a path held before the transaction touched it."""

    path: Path
    kind: Literal["absent", "file", "symlink", "directory"]
    data: bytes = b""
    mode: int | None = None
    link: str = ""
    created_dirs: tuple[Path, ...] = ()  # made for this path, deepest first


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

    def __init__(self, check: Callable[[], None] | None = None) -> None:
        # Called before every step; raising (e.g. ``Aborted``) rolls back.
        self._check = check or (lambda: None)
        self._ops: list[_Op] = []
        self._originals: dict[Path, _Original] = {}
        self._order: list[Path] = []

    def write(self, path: Path, data: bytes, mode: int | None = None) -> None:
        self._ops.append(_Op("write", path, data, mode))

    def delete(self, path: Path) -> None:
        self._ops.append(_Op("delete", path))

    @property
    def touched(self) -> list[Path]:
        """Paths changed so far, in the order they were first touched."""
        return list(self._order)

    def commit(self) -> None:
        for op in self._ops:
            try:
                self._check()
                self._remember(op)
                self._run(op)
            except BaseException as error:
                restored, unrestored = self._rollback()
                if not isinstance(error, OSError | _Refused):
                    raise  # cancellation (``Aborted``) and bugs: rolled back, then passed on
                raise TransactionFailed(
                    op.action, op.path, _reason(op, error), error, restored, unrestored
                ) from error

    def rollback(self) -> tuple[list[Path], list[tuple[Path, str]]]:
        """Undo a committed transaction (a later step of a bigger change failed).

        Returns (paths put back, paths that could not be with why).  Blocking.
        """
        return self._rollback()

    # --- steps ------------------------------------------------------------------------------

    def _key(self, op: _Op) -> Path:
        # A write goes through a symlink to its target; a delete removes the link itself.
        return Path(os.path.realpath(op.path)) if op.action == "write" else op.path

    def _remember(self, op: _Op) -> None:
        key = self._key(op)
        if key in self._originals:
            return
        self._originals[key] = _snapshot(key, creating=op.action == "write")
        self._order.append(key)

    def _run(self, op: _Op) -> None:
        if op.action == "write":
            atomic_write(op.path, op.data, op.mode)
        else:
            if os.path.isdir(op.path) and not os.path.islink(op.path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(op.path))
            os.unlink(op.path)

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


class _Refused(Exception):
    """A path the transaction will not replace (it could not put it back)."""


def _snapshot(path: Path, *, creating: bool) -> _Original:
    try:
        info = path.lstat()
    except FileNotFoundError:
        missing = _missing_dirs(path.parent) if creating else ()
        return _Original(path, "absent", created_dirs=missing)
    except NotADirectoryError:
        return _Original(path, "absent")  # a parent is a file: the step fails untouched
    if stat.S_ISLNK(info.st_mode):
        return _Original(path, "symlink", link=os.readlink(path))
    if stat.S_ISREG(info.st_mode):
        return _Original(path, "file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    if stat.S_ISDIR(info.st_mode):
        return _Original(path, "directory")  # replacing or unlinking it fails untouched
    raise _Refused(f"{path} is not a regular file")


def _missing_dirs(directory: Path) -> tuple[Path, ...]:
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        if os.path.lexists(directory):
            break  # a dangling symlink: mkdir will fail, nothing is created
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
        atomic_write(path, original.data, original.mode)
        return True
    if os.path.lexists(path):
        os.unlink(path)
    if original.kind == "symlink":
        os.symlink(original.link, path)
    for directory in original.created_dirs:
        with contextlib.suppress(OSError):  # not empty: something else lives there now
            directory.rmdir()
    return True


def _unchanged(original: _Original) -> bool:
    # Leaves a file the failed step never reached (or never replaced) untouched, mtime included.
    path = original.path
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return original.kind == "absent" and not any(d.exists() for d in original.created_dirs)
    if original.kind == "symlink":
        return stat.S_ISLNK(info.st_mode) and os.readlink(path) == original.link
    if original.kind == "file" and stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode) == original.mode and path.read_bytes() == original.data
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
