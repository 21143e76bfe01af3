"""Files reached through directory file descriptors, never through a symbolic link.

A file tool checks a path once (``tools.fsio.paths``: where it really is, every symlink
resolved) and then must touch exactly what it checked.  Opening the checked path by
name would resolve it again, and a folder swapped for a link in between (``d`` ->
``/elsewhere``) would take the write elsewhere.  So every function here takes a path
whose symlinks are already resolved and walks it from ``/``: each folder is opened
with ``O_DIRECTORY | O_NOFOLLOW`` relative to the one above, the file itself with
``O_NOFOLLOW``, and a replacement is created and renamed inside its folder's fd.  A
symlink met on the way means the path changed after it was checked: ``PathChanged``.

The final name is never followed either: ``replace`` puts a file where a symlink
appeared (the link is replaced, its target untouched), ``read_file`` refuses one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from tools.fsio import openat2

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PathChanged(OSError):
    """A symlink appeared on a path after it was checked; nothing was touched."""

    def __init__(self, path: Path, where: Path) -> None:
        super().__init__(
            errno.ELOOP,
            f"{where} became a symbolic link after the path was checked, so {path} "
            "was not touched (it could now lead somewhere else)",
            str(path),
        )
        self.where = where


def _components(path: Path | str) -> list[str]:
    text = os.fspath(path)
    if not text.startswith("/"):
        raise ValueError(f"{path} is not absolute")
    # Text, not Path.parts (same names: "" and "." dropped, ".." kept and walked
    # physically): this runs for every file operation.
    return [name for name in text.split("/") if name not in ("", ".")]


def open_dir(directory: Path, *, create: bool = False) -> int:
    """An fd of ``directory``, walked from ``/`` without following links.

    ``create`` makes missing folders (mode 0777 less the umask), as ``mkdir -p``.
    """
    fd = _open_at_once(directory, _DIR_FLAGS)
    if fd is not None:
        return fd
    names = _components(directory)
    fd = os.open("/", _DIR_FLAGS)
    for depth, name in enumerate(names):
        fd = _step(fd, name, names, depth, directory, create)  # consumes the fd it is given
    return fd


def _open_at_once(path: Path | str, flags: int) -> int | None:
    """The fd from one ``openat2`` that follows no link; None when the walk must decide:
    no ``openat2`` here, a link on the way (the walk says where), or a missing folder
    (the walk may create it)."""
    text = os.fspath(path)
    if not text.startswith("/"):
        return None  # the walk refuses it
    try:
        return openat2.open_no_symlinks(text, flags)
    except openat2.Unsupported:
        return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOENT):
            return None
        raise


def _step(fd: int, name: str, names: list[str], depth: int, target: Path, create: bool) -> int:
    """Open ``name`` (``names[depth]``) inside ``fd`` as a folder (closing ``fd``); the new fd."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made meanwhile: open it below
                os.mkdir(name, 0o777, dir_fd=fd)
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                here = Path("/", *names[: depth + 1])  # built only to say where
                raise PathChanged(target, here) from None
            raise
    finally:
        os.close(fd)


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def parent(path: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """``(fd of path's folder, path's name)``; the fd is closed afterwards."""
    if path.name == "":
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    fd = open_dir(path.parent, create=create)
    try:
        yield fd, path.name
    finally:
        os.close(fd)


def lstat(path: Path) -> os.stat_result | None:
    """The path's own status (a link is not followed), or None when nothing is there."""
    try:
        with parent(path) as (fd, name):
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_file(path: Path | str, flags: int = os.O_RDONLY) -> int:
    """An fd of the file at ``path`` itself (``O_NOFOLLOW``: a link there is refused)."""
    if not flags & os.O_CREAT:
        fd = _open_at_once(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
        if fd is not None:
            return fd
    path = Path(path)  # the walk, where one openat2 could not decide
    with parent(path) as (fd, name):
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PathChanged(path, path) from None
            raise


def read_file(path: Path) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes and status; a FIFO or device is refused unopened."""
    info = lstat(path)
    if info is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    if stat.S_ISLNK(info.st_mode):
        raise PathChanged(path, path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    fd = open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped for a FIFO after the lstat
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return handle.read(), info


def temp_name(name: str, tag: str | None = None) -> str:
    """The temp file a replacement of ``name`` is written to first (hidden, in its folder)."""
    return f".{name}.{tag or os.urandom(4).hex()}.toolhost"


def replace(path: Path, data: bytes, mode: int, *, tag: str | None = None) -> None:
    """Put ``data`` at ``path`` in one rename inside its folder; missing folders are made.

    Written to a temp file beside it (``temp_name``), flushed, given ``mode``, renamed
    over the name (a link there is replaced, not followed) and the folder flushed.
    """
    with parent(path, create=True) as (fd, name):
        tmp = temp_name(name, tag)
        out = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=fd,
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.fsync(out)
                os.fchmod(out, mode)
            finally:
                os.close(out)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        with contextlib.suppress(OSError):
            os.fsync(fd)


def unlink(path: Path) -> None:
    """Remove the name ``path`` (a link itself, never its target)."""
    with parent(path) as (fd, name):
        os.unlink(name, dir_fd=fd)


def symlink(target: str, path: Path) -> None:
    with parent(path) as (fd, name):
        os.symlink(target, name, dir_fd=fd)


def readlink(path: Path) -> str:
    with parent(path) as (fd, name):
        return os.readlink(name, dir_fd=fd)


def rmdir(path: Path) -> None:
    with parent(path) as (fd, name):
        os.rmdir(name, dir_fd=fd)
