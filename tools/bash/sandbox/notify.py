"""The seccomp filter that stops a command at every system call that changes a path,
so the supervisor can keep what the path held before (``capture``) and then let the
call go on (``SECCOMP_USER_NOTIF_FLAG_CONTINUE``), or make a new name for it itself
(``creations``: the call's result is then the supervisor's, ``answer``/``add_fd``).

Two filters: ``program()`` stops every call below (the capture's); ``program(CREATING)``
only those that can create a name (``open``/``openat`` with ``O_CREAT``, ``creat``,
``openat2``, ``mkdir*``, ``mknod*``, ``symlink*``, ``link*``, ``rename*``), for a
command whose changes are not kept.  Once the supervisor has received a stopped call,
only SIGKILL interrupts it (``SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV``): a signal
must not restart a call whose name the supervisor already made.

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
import select
import struct
from dataclasses import dataclass

from tools.bash.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, arch, prctl, syscall

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 1 << 5  # Linux 5.19
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
NOTIF_ID_VALID = 0x40082102  # _IOW('!', 2, __u64)
NOTIF_ADDFD = 0x40182103  # _IOW('!', 3, struct seccomp_notif_addfd)
FLAG_CONTINUE = 1
ADDFD_FLAG_SEND = 2  # Linux 5.14: the new fd is the call's result
_NOTIF_SIZE = 80
_RESP_SIZE = 24
_ADDFD_SIZE = 24

# The calls that can give a path a new name (the rest of the table only changes one).
CREATING = frozenset(
    {"open", "creat", "openat", "openat2", "mkdir", "mkdirat", "mknod", "mknodat"}
    | {"symlink", "symlinkat", "link", "linkat", "rename", "renameat", "renameat2"}
)


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


def program(calls: frozenset[str] | None = None) -> bytes | None:
    """The filter's BPF instructions, or None where this architecture is not known.

    ``calls``: stop only these (``CREATING``), and ``open``/``openat`` only with
    ``O_CREAT``; None: every call of the table, opens with any write flag."""
    machine, numbers = arch(), table()
    if machine is None or numbers is None:
        return None
    stopped = {n: nr for n, nr in numbers.calls.items() if calls is None or n in calls}
    open_flags = WRITE_FLAGS if calls is None else os.O_CREAT
    source: list[str | tuple[int, int, int | str, int | str]] = [
        (_LD_ABS, 4, 0, 0),  # seccomp_data.arch
        (_JEQ, machine.audit, 0, "enosys"),
        (_LD_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine.x32_bit:
        source.append((_JGE, machine.x32_bit, "enosys", 0))
    source.append((_JEQ, numbers.io_uring_setup, "enosys", 0))
    flag_arg = {"open": 1, "openat": 2}
    for name, number in stopped.items():
        if name in flag_arg:
            source.append((_JEQ, number, f"flags_{name}", 0))
        else:
            source.append((_JEQ, number, "notify", 0))
    source.append((_RET, _RET_ALLOW, 0, 0))
    for name, arg in flag_arg.items():
        if name in stopped:
            source.append(f"flags_{name}")
            source.append((_LD_ABS, 16 + 8 * arg, 0, 0))  # args[arg], low 32 bits
            source.append((_JSET, open_flags, "notify", 0))
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
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
    try:
        return _seccomp(numbers.seccomp, flags, fprog)
    except OSError as error:
        if error.errno != errno.EINVAL:  # before Linux 5.19: no killable waits
            raise
    return _seccomp(numbers.seccomp, SECCOMP_FILTER_FLAG_NEW_LISTENER, fprog)


def _seccomp(number: int, flags: int, fprog: _Filter) -> int:
    return syscall(
        number,
        ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
        ctypes.c_ulong(flags),
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

    def orphaned(self) -> bool:
        """Whether no process uses the filter any more (the kernel says so by a hang-up
        on the listener, which then stays readable: without this check a finished
        command's listener would be served, and kept open, for ever)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        return any(events & select.POLLHUP for _, events in poller.poll(0))

    def resume(self, notif_id: int) -> None:
        """Let the stopped call go on (a call killed meanwhile answers ENOENT: ignored)."""
        struct.pack_into("=QqiI", self._resp, 0, notif_id, 0, 0, FLAG_CONTINUE)
        _ioctl(self.fd, NOTIF_SEND, self._resp)

    def answer(self, notif_id: int, value: int = 0, error: int = 0) -> None:
        """End the stopped call without running it: it returns ``value``, or fails
        with ``error`` (an errno) when that is not 0."""
        struct.pack_into("=QqiI", self._resp, 0, notif_id, value, -error, 0)
        _ioctl(self.fd, NOTIF_SEND, self._resp)

    def add_fd(self, notif_id: int, fd: int, cloexec: bool) -> int:
        """Put ``fd`` in the stopped process as the call's result (its number there);
        raises OSError when it cannot (the process is gone: ENOENT; EMFILE)."""
        flags = os.O_CLOEXEC if cloexec else 0
        request = struct.pack("=QIIII", notif_id, ADDFD_FLAG_SEND, fd, 0, flags)
        buffer = ctypes.create_string_buffer(request, _ADDFD_SIZE)
        number = _ioctl(self.fd, NOTIF_ADDFD, buffer)
        if number < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return int(number)

    def valid(self, notif_id: int) -> bool:
        """Whether the call is still stopped (its process has not died: its pid, and
        what the supervisor read of it through /proc, are still its own)."""
        value = ctypes.c_uint64(notif_id)
        return bool(_ioctl(self.fd, NOTIF_ID_VALID, ctypes.byref(value)) == 0)

    def close(self) -> None:
        os.close(self.fd)


# ---------------------------------------------------------------- the stopped process

PATH_MAX = 4096


def signed(value: int) -> int:
    """A 32-bit argument (a directory fd, AT_FDCWD) as the signed int it is."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def read_bytes(pid: int, address: int, size: int) -> bytes | None:
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.pread(fd, size, address)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_path(pid: int, address: int) -> bytes | None:
    """The NUL-terminated string at ``address`` in ``pid`` (at most PATH_MAX bytes)."""
    if not address:
        return None
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    data = b""
    try:
        while len(data) < PATH_MAX:
            # Read up to the end of the page first: the next page may not be mapped.
            at = address + len(data)
            chunk = os.pread(fd, 4096 - (at % 4096), at)
            if not chunk:
                break
            end = chunk.find(b"\0")
            if end >= 0:
                return data + chunk[:end]
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def read_string(pid: int, address: int) -> str | None:
    path = read_path(pid, address)
    return None if path is None else os.fsdecode(path)
