"""libc through ctypes, and the numbers that differ between architectures.

Landlock's three system calls have no libc wrapper on most systems, so they are
called through ``syscall(2)`` by number; ``unshare``, ``mount`` and ``prctl`` are
libc functions. Nothing here runs at import time beyond loading libc.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)


def _function(name: str, argtypes: list[Any], restype: Any = ctypes.c_int) -> Any:
    """libc's ``name``, typed; None where this libc has no such function (not Linux)."""
    function = getattr(_libc, name, None)
    if function is not None:
        function.argtypes = argtypes
        function.restype = restype
    return function


_syscall = getattr(_libc, "syscall", None)
if _syscall is not None:
    _syscall.restype = ctypes.c_long
_prctl = _function(
    "prctl", [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
)
_mount = _function(
    "mount",
    [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p],
)
_unshare = _function("unshare", [ctypes.c_int])


@dataclass(frozen=True)
class Arch:
    """What the seccomp filter and the Landlock calls need to know about the CPU."""

    name: str
    audit: int  # AUDIT_ARCH_* that seccomp reports for native system calls
    landlock: int  # number of landlock_create_ruleset; add_rule and restrict_self follow
    socket: int
    io_uring_setup: int
    x32_bit: int = 0  # x86-64's x32 ABI marks its system calls with this bit


# Landlock got the same numbers (444-446) on every architecture of the unified table.
_ARCHES = {
    "x86_64": Arch("x86_64", 0xC000003E, 444, 41, 425, x32_bit=0x40000000),
    "aarch64": Arch("aarch64", 0xC00000B7, 444, 198, 425),
    "riscv64": Arch("riscv64", 0xC00000F3, 444, 198, 425),
}


def arch() -> Arch | None:
    """This machine's architecture, or None where the numbers are not known here."""
    return _ARCHES.get(platform.machine())


class SyscallError(OSError):
    """A failed system call, named (``unshare: Operation not permitted``)."""


def _present(function: Any, what: str) -> Any:
    if function is None:
        raise SyscallError(38, f"{what}: not available on this system")  # ENOSYS
    return function


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise SyscallError(errno, f"{what}: {os.strerror(errno)}")
    return result


def syscall(number: int, *args: Any, what: str) -> int:
    return _check(int(_present(_syscall, what)(number, *args)), what)


def prctl(option: int, arg2: int = 0, arg3: int = 0, what: str = "prctl") -> int:
    return _check(_present(_prctl, what)(option, arg2, arg3, 0, 0), what)


def prctl_pointer(option: int, arg2: int, pointer: Any, what: str) -> int:
    """prctl with a pointer as its third argument (PR_SET_SECCOMP)."""
    address = ctypes.cast(pointer, ctypes.c_void_p).value or 0
    return _check(_present(_prctl, what)(option, arg2, address, 0, 0), what)


def unshare(flags: int) -> None:
    _check(_present(_unshare, "unshare")(flags), "unshare")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def mount_setattr(path: str, *, set_: int = 0, clear: int = 0, recursive: bool) -> None:
    """Change the flags of the mount at ``path`` (and of every mount below it, if
    ``recursive``) in one call: ``mount_setattr(2)``, Linux 5.12 and later."""
    attr = _MountAttr(set_, clear, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    what = f"mount_setattr {path}"
    syscall(
        MOUNT_SETATTR,
        ctypes.c_int(AT_FDCWD),
        os.fsencode(path),
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        what=what,
    )


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    mount_ = _present(_mount, "mount")
    result = mount_(encode(source), encode(target), encode(fstype), flags, encode(data))
    _check(result, f"mount {target}")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
    """``openat2(2)`` (Linux 5.6) without a mode: a new fd, or OSError."""
    how = _OpenHow(flags, 0, resolve)
    number = _present(_syscall, "openat2")(
        OPENAT2, ctypes.c_int(dirfd), path, ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how))
    )
    return _check(int(number), "openat2")


_renameat2 = _function(
    "renameat2", [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
)


def renameat2(olddirfd: int, old: bytes, newdirfd: int, new: bytes, flags: int) -> None:
    """``renameat2(2)`` through libc (glibc 2.28+); OSError when it fails."""
    _check(_present(_renameat2, "renameat2")(olddirfd, old, newdirfd, new, flags), "renameat2")


# mount_setattr(2), openat2(2): the same numbers on every architecture of the unified table
MOUNT_SETATTR = 442
OPENAT2 = 437
MOUNT_ATTR_RDONLY = 0x1
AT_FDCWD = -100
AT_RECURSIVE = 0x8000

# prctl options
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# unshare flags
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

# mount flags
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MS_RELATIME = 1 << 21
