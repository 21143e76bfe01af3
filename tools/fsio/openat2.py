"""``openat2(2)`` with ``RESOLVE_NO_SYMLINKS``: a whole path opened in one system call,
refused (``ELOOP``) if any part of it is a symbolic link.

That is what ``tools.fsio.dirfd`` proves by walking a path from ``/`` a folder at a
time, at the cost of two system calls per folder; and, for a path with no link on
it, what ``os.path.realpath`` would return unchanged, without one ``lstat`` per part.
Python's ``os`` has no ``openat2``, so it is called through ``ctypes``. Linux 5.6 and
later have it; elsewhere, or where a seccomp filter refuses it, ``open_no_symlinks``
raises ``Unsupported`` once and every caller keeps its portable way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable
from typing import Any

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the unified table)
_AT_FDCWD = -100
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04


class Unsupported(Exception):
    """This system has no usable ``openat2``; walk the path instead."""


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


def _syscall() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_long
    return function


_call = _syscall()
# One open_how per set of flags, built once: the kernel only reads it, and building it
# and a reference to it took 1.1 of a call's 2.6 us.
_HOW: dict[int, Any] = {}
_HOW_SIZE = ctypes.sizeof(_OpenHow)


def _how(flags: int) -> Any:
    how = _OpenHow(flags, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    reference = _HOW[flags] = ctypes.byref(how)  # the reference keeps ``how`` alive
    return reference


def open_no_symlinks(path: str, flags: int) -> int:
    """An fd of the absolute ``path``, no symbolic link followed on any part of it.

    Raises ``OSError`` as ``os.open`` would (``ELOOP`` when a link is on the way), or
    ``Unsupported`` when the kernel cannot do it.
    """
    global _call
    if _call is None:
        raise Unsupported()
    encoded = os.fsencode(path)
    if b"\0" in encoded:  # C would stop at the NUL and open a shorter path
        raise ValueError("embedded null byte")
    how = _HOW.get(flags) or _how(flags)
    fd = _call(_SYS_OPENAT2, _AT_FDCWD, encoded, how, _HOW_SIZE)
    if fd >= 0:
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM):  # no openat2, or a filter refusing it
        _call = None
        raise Unsupported()
    raise OSError(code, os.strerror(code), path)


def has_no_symlinks(directory: str) -> bool:
    """True when the absolute ``directory`` exists and no part of it is a symbolic link
    (so it is its own real path); False when that is not known."""
    return _opens_without_links(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)


def is_own_real_path(path: str) -> bool:
    """True when the absolute ``path`` (a file, a folder or anything else) exists and no
    part of it, its last included, is a symbolic link; False when that is not known."""
    return _opens_without_links(path, os.O_PATH | os.O_CLOEXEC)


def open_for_reading(path: str) -> int | None:
    """An fd for reading the absolute ``path``, opened with no symbolic link on any part of
    it, which makes it its own real path; None when that is not known at once (a link on
    the way, nothing there, no permission, no ``openat2``) and the caller must take the
    long way. ``O_NONBLOCK``: a FIFO swapped in for a checked file does not hang the open.
    """
    return _open_without_links(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)


def _opens_without_links(path: str, flags: int) -> bool:
    fd = _open_without_links(path, flags)
    if fd is None:
        return False
    os.close(fd)
    return True


def _open_without_links(path: str, flags: int) -> int | None:
    """``open_no_symlinks`` of an absolute path; None where it cannot say yes."""
    if not path.startswith("/"):
        return None
    try:
        return open_no_symlinks(path, flags)
    except (OSError, Unsupported):
        return None
