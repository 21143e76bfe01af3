"""The seccomp filter that stops a command at every system call that changes a path,
so the supervisor can keep what the path held before (``capture``) and then let the
call go on (``SECCOMP_USER_NOTIF_FLAG_CONTINUE``).

Which calls: opening for writing (``open``/``openat`` with a write flag, ``creat``,
``openat2``), ``truncate``/``ftruncate``/``fallocate``, ``rename*``, ``link*``,
``symlink*``, ``unlink*``, ``rmdir``, ``mkdir*``, ``mknod*`` and ``chmod``/``fchmod*``.
Reads never stop (the flags are checked in the filter), so a command that only
reads runs exactly as fast as without it. ``io_uring_setup`` fails with ENOSYS
(io_uring's operations would not pass the filter; programs fall back to plain calls),
and so does every call of another ABI (i386 on x86-64, x32, arm on arm64): their
numbers differ, and a call not seen is a change not kept.

A filter is inherited by every process the command starts and cannot be removed,
so background jobs stay recorded too. Only one listener may exist per process
tree: a command that installs its own (a nested toolhost) gets EBUSY for it.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass

from tools.bash.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, arch, prctl, syscall

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
_RET_ALLOW = 0x7FFF0000
_RET_NOTIFY = 0x7FC00000
_RET_ERRNO = 0x00050000
_LD_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

# ioctls on the listener (linux/seccomp.h)
NOTIF_RECV = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif)
NOTIF_SEND = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp)
FLAG_CONTINUE = 1
_NOTIF_SIZE = 80
_RESP_SIZE = 24


@dataclass(frozen=True)
class Table:
    """This architecture's numbers: the seccomp syscall, io_uring_setup, and the calls
    that change paths (name -> number)."""

    seccomp: int
    io_uring_setup: int
    calls: dict[str, int]

    def names(self) -> dict[int, str]:
        return {n: name for name, n in self.calls.items()}


_X86_64 = Table(
    317,
    425,
    {
        "open": 2,
        "creat": 85,
        "openat": 257,
        "openat2": 437,
        "truncate": 76,
        "ftruncate": 77,
        "fallocate": 285,
        "rename": 82,
        "renameat": 264,
        "renameat2": 316,
        "link": 86,
        "linkat": 265,
        "symlink": 88,
        "symlinkat": 266,
        "unlink": 87,
        "unlinkat": 263,
        "rmdir": 84,
        "mkdir": 83,
        "mkdirat": 258,
        "mknod": 133,
        "mknodat": 259,
        "chmod": 90,
        "fchmod": 91,
        "fchmodat": 268,
        "fchmodat2": 452,
    },
)
# The generic table (arm64, riscv64): only the *at forms exist.
_GENERIC = Table(
    277,
    425,
    {
        "openat": 56,
        "openat2": 437,
        "truncate": 45,
        "ftruncate": 46,
        "fallocate": 47,
        "renameat": 38,
        "renameat2": 276,
        "linkat": 37,
        "symlinkat": 36,
        "unlinkat": 35,
        "mkdirat": 34,
        "mknodat": 33,
        "fchmod": 52,
        "fchmodat": 53,
        "fchmodat2": 452,
    },
)
_TABLES = {"x86_64": _X86_64, "aarch64": _GENERIC, "riscv64": _GENERIC}


def table() -> Table | None:
    machine = arch()
    return _TABLES.get(machine.name) if machine else None


def program() -> bytes | None:
    """The filter's BPF instructions, or None where this architecture is not known."""
    machine, numbers = arch(), table()
    if machine is None or numbers is None:
        return None
    source: list[str | tuple[int, int, int | str, int | str]] = [
        (_LD_ABS, 4, 0, 0),  # seccomp_data.arch
        (_JEQ, machine.audit, 0, "enosys"),
        (_LD_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine.x32_bit:
        source.append((_JGE, machine.x32_bit, "enosys", 0))
    source.append((_JEQ, numbers.io_uring_setup, "enosys", 0))
    flag_arg = {"open": 1, "openat": 2}
    for name, number in numbers.calls.items():
        if name in flag_arg:
            source.append((_JEQ, number, f"flags_{name}", 0))
        else:
            source.append((_JEQ, number, "notify", 0))
    source.append((_RET, _RET_ALLOW, 0, 0))
    for name, arg in flag_arg.items():
        if name in numbers.calls:
            source.append(f"flags_{name}")
            source.append((_LD_ABS, 16 + 8 * arg, 0, 0))  # args[arg], low 32 bits
            source.append((_JSET, WRITE_FLAGS, "notify", 0))
            source.append((_RET, _RET_ALLOW, 0, 0))
    source += [
        "notify",
        (_RET, _RET_NOTIFY, 0, 0),
        "enosys",
        (_RET, _RET_ERRNO | errno.ENOSYS, 0, 0),
    ]
    return _assemble(source)


def _assemble(source: list[str | tuple[int, int, int | str, int | str]]) -> bytes:
    labels: dict[str, int] = {}
    insns: list[tuple[int, int, int | str, int | str]] = []
    for item in source:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def resolve(jump: int | str, index: int) -> int:
        offset = labels[jump] - index - 1 if isinstance(jump, str) else jump
        if not 0 <= offset <= 255:
            raise ValueError(f"jump out of range in the capture filter ({offset})")
        return offset

    return b"".join(
        struct.pack("=HBBI", code, resolve(jt, i), resolve(jf, i), k)
        for i, (code, k, jt, jf) in enumerate(insns)
    )


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(code: bytes) -> int:
    """In the child: install the filter; returns the listener fd for the supervisor."""
    numbers = table()
    if numbers is None:
        raise OSError(errno.ENOSYS, "no capture filter for this architecture")
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Filter(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    prctl(PR_SET_NO_NEW_PRIVS, 1, what="prctl(PR_SET_NO_NEW_PRIVS)")
    return syscall(
        numbers.seccomp,
        ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
        ctypes.c_ulong(SECCOMP_FILTER_FLAG_NEW_LISTENER),
        ctypes.byref(fprog),
        what="seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)",
    )


@dataclass(frozen=True)
class Notification:
    id: int
    pid: int
    nr: int
    args: tuple[int, ...]


_libc = ctypes.CDLL(None, use_errno=True)
_ioctl = _libc.ioctl
_ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
_ioctl.restype = ctypes.c_int


class Listener:
    """The supervisor's end of one command's filter."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._notif = ctypes.create_string_buffer(_NOTIF_SIZE)
        self._resp = ctypes.create_string_buffer(_RESP_SIZE)

    def receive(self) -> Notification | None:
        """The next stopped call; None when none is waiting any more (EINTR, or the
        call was ended meanwhile). Raises OSError when every process of it is gone."""
        ctypes.memset(self._notif, 0, _NOTIF_SIZE)
        if _ioctl(self.fd, NOTIF_RECV, self._notif) < 0:
            number = ctypes.get_errno()
            if number in (errno.EINTR, errno.ENOENT, errno.EAGAIN):
                return None
            raise OSError(number, os.strerror(number))
        notif_id, pid, _flags, nr, _arch, _ip = struct.unpack_from("=QIIiIQ", self._notif.raw)
        args = struct.unpack_from("=6Q", self._notif.raw, 32)
        return Notification(notif_id, pid, nr, args)

    def resume(self, notif_id: int) -> None:
        """Let the stopped call go on (a call killed meanwhile answers ENOENT: ignored)."""
        struct.pack_into("=QqiI", self._resp, 0, notif_id, 0, 0, FLAG_CONTINUE)
        _ioctl(self.fd, NOTIF_SEND, self._resp)

    def close(self) -> None:
        os.close(self.fd)
