"""A file's birth time, through ``statx(2)``: when it was created, which ``os.stat``
does not report on Linux before Python 3.12 (and ``st_ctime`` is the last change, not
the creation). Filesystems that keep no birth time (or a kernel or libc without
``statx``) answer None, and callers must then not assume either way.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_BTIME = 0x800
_BTIME_OFFSET = 80  # struct statx: stx_btime {__s64 tv_sec; __u32 tv_nsec; __s32 pad}
_STATX_SIZE = 256


def _statx() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):  # glibc before 2.28, or another libc
        return None
    function.restype = ctypes.c_int
    function.argtypes = (
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_void_p,
    )
    return function


_call = _statx()


def born_ns(path: str) -> int | None:
    """When ``path`` (not followed if a link) was created, in ns since the epoch; None
    when this system or filesystem does not say."""
    if _call is None:
        return None
    buffer = ctypes.create_string_buffer(_STATX_SIZE)
    if _call(_AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW, _STATX_BTIME, buffer) != 0:
        return None
    mask = int.from_bytes(buffer.raw[0:4], sys.byteorder)
    if not mask & _STATX_BTIME:
        return None
    seconds = int.from_bytes(
        buffer.raw[_BTIME_OFFSET : _BTIME_OFFSET + 8], sys.byteorder, signed=True
    )
    nanos = int.from_bytes(buffer.raw[_BTIME_OFFSET + 8 : _BTIME_OFFSET + 12], sys.byteorder)
    return seconds * 1_000_000_000 + nanos
