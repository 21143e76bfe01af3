"""Landlock rulesets through ctypes: where a command may write (and read, and connect).

Landlock is an allow-list of file hierarchies: a ruleset *handles* some access
rights (everything not granted by a rule is then denied) and each rule grants some
of them beneath one directory, or on one file. The ruleset is built in the
supervisor (``build``: opening every path with ``O_PATH``), and the child only
enforces it between fork and exec (``enforce``: no_new_privs, restrict_self): two
system calls, so a failure there is rare and always reported.

Writes are handled at every ABI this module accepts (3 and later: before ABI 2 a
rename across directories was always denied, before ABI 3 ``truncate`` was not
covered). Reads are handled only when some path is denied for reading: then read
rights are granted on every sibling along the way to each denied path (Landlock
cannot carve a hole in a granted hierarchy), so a denied path's name can still be
listed but its contents cannot be read or run.

Rights from newer ABIs are used where the kernel has them: TCP bind/connect (4),
device ioctls (5), abstract Unix socket and signal scoping (6; ``zygote`` sets them
once for every command).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tools.bash.sandbox.syscalls import (
    PR_SET_NO_NEW_PRIVS,
    SyscallError,
    arch,
    prctl,
    syscall,
)

MIN_ABI = 3

# Filesystem rights (include/uapi/linux/landlock.h)
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

READ = EXECUTE | READ_FILE | READ_DIR
# Making a name: every kind but a socket (``bind``, which no supervisor could make).
MAKING = MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # allowed on a file

# Network rights (ABI 4) and scopes (ABI 6)
BIND_TCP = 1 << 0
CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1 << 0


def fs_rights(abi: int) -> int:
    """Every filesystem right the kernel's ABI knows."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI: 0 when it has none (or it is disabled at boot)."""
    machine = arch()
    if machine is None:
        return 0
    try:
        return syscall(
            machine.landlock,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(_CREATE_RULESET_VERSION),
            what="landlock_create_ruleset",
        )
    except OSError:
        return 0  # ENOSYS: not built in; EOPNOTSUPP: built in, not enabled


@dataclass(frozen=True)
class Spec:
    """What one command may do, in paths (all absolute; missing ones are skipped)."""

    writable: Sequence[str]  # directories (or files) with every right
    devices: Sequence[str]  # device files (and /dev/pts) it may read, write and ioctl
    read_denied: Sequence[str] = ()  # files and directories it may not read
    deny_tcp: bool = False  # no TCP bind or connect at all (ABI 4)
    scope_abstract_unix: bool = False  # no connecting to abstract sockets outside (ABI 6)


@dataclass
class Ruleset:
    """A built ruleset: its fd (passed to the child) and what it could not grant."""

    fd: int
    abi: int
    skipped: list[str] = field(default_factory=list)  # paths that do not exist
    denied_reads: list[str] = field(default_factory=list)  # read denials in force

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def build(spec: Spec, abi: int) -> Ruleset:
    """Create the ruleset and add every rule; raises ``OSError`` when Landlock refuses."""
    machine = arch()
    if machine is None or abi < MIN_ABI:
        raise SyscallError(0, f"Landlock ABI {abi} is too old (needs {MIN_ABI})")
    handled = fs_rights(abi)
    denied = _existing(spec.read_denied)
    if not denied:
        handled &= ~READ
    attr = _RulesetAttr(handled, 0, 0)
    if spec.deny_tcp and abi >= 4:
        attr.handled_access_net = BIND_TCP | CONNECT_TCP
    if spec.scope_abstract_unix and abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16  # `scoped` came with ABI 6
    fd = syscall(
        machine.landlock,
        ctypes.byref(attr),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),
        what="landlock_create_ruleset",
    )
    ruleset = Ruleset(fd, abi, denied_reads=denied)
    try:
        adder = _Adder(fd, handled, machine.landlock + 1, ruleset.skipped)
        if denied:
            _grant_reads_around(adder, denied)
        device_rights = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV | READ_DIR
        for path in spec.devices:
            adder.add(path, device_rights)
        for path in spec.writable:
            adder.add(path, handled)
    except BaseException:
        ruleset.close()
        raise
    return ruleset


def creations_layer(writable: Sequence[str], free: Sequence[str], abi: int) -> int:
    """A second layer for a command (``creations``): no new name anywhere but beneath
    ``free`` (a socket aside), while renaming and linking between the ``writable``
    folders stays possible (REFER, which any layer denies unless granted). Returns the
    ruleset's fd, for the child to enforce after the first layer."""
    machine = arch()
    if machine is None or abi < MIN_ABI:
        raise SyscallError(0, f"Landlock ABI {abi} is too old (needs {MIN_ABI})")
    handled = MAKING | REFER
    attr = _RulesetAttr(handled, 0, 0)
    fd = syscall(
        machine.landlock,
        ctypes.byref(attr),
        ctypes.c_size_t(16),
        ctypes.c_uint32(0),
        what="landlock_create_ruleset",
    )
    try:
        adder = _Adder(fd, handled, machine.landlock + 1, [])
        for path in writable:
            adder.add(path, REFER)
        for path in free:
            adder.add(path, handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def allow_making(ruleset_fd: int, path: str) -> None:
    """In the child: names may be made beneath ``path`` (its private ``/dev/shm``) in
    the ``creations_layer``."""
    machine = arch()
    assert machine is not None
    handled = MAKING | REFER
    _Adder(ruleset_fd, handled, machine.landlock + 1, []).add(path, handled)


def scope_self(abi: int) -> None:
    """Restrict the calling process (and all it starts) to signalling, and connecting
    to abstract Unix sockets of, processes in its own Landlock domain or one nested in
    it (ABI 6); no file or network right is handled, so nothing else changes."""
    machine = arch()
    if machine is None or abi < 6:
        raise SyscallError(0, f"Landlock ABI {abi} has no scopes (needs 6)")
    attr = _RulesetAttr(0, 0, SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET)
    fd = syscall(
        machine.landlock,
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
        what="landlock_create_ruleset",
    )
    enforce(fd, abi)


def allow(ruleset_fd: int, path: str, abi: int) -> None:
    """In the child: every right beneath ``path``, a folder the child mounted itself
    (its private ``/dev/shm``), which the supervisor could not name when it built the
    ruleset.  Whether the ruleset handles reads is not known here: tried with them,
    then without (EINVAL: a right the ruleset does not handle)."""
    machine = arch()
    assert machine is not None
    for rights in (fs_rights(abi), fs_rights(abi) & ~READ):
        try:
            _Adder(ruleset_fd, rights, machine.landlock + 1, []).add(path, rights)
            return
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
    raise SyscallError(errno.EINVAL, f"landlock_add_rule {path}: refused")


def enforce(ruleset_fd: int, abi: int) -> None:
    """In the child, just before exec: no new privileges, then restrict for good."""
    machine = arch()
    assert machine is not None
    prctl(PR_SET_NO_NEW_PRIVS, 1, what="prctl(PR_SET_NO_NEW_PRIVS)")
    syscall(
        machine.landlock + 2,
        ctypes.c_int(ruleset_fd),
        ctypes.c_uint32(0),
        what="landlock_restrict_self",
    )
    os.close(ruleset_fd)


class _Adder:
    def __init__(self, fd: int, handled: int, number: int, skipped: list[str]) -> None:
        self.fd = fd
        self.handled = handled
        self.number = number
        self.skipped = skipped

    def add(self, path: str, rights: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            self.skipped.append(path)
            return
        try:
            is_dir = stat.S_ISDIR(os.fstat(target).st_mode)
            allowed = rights & self.handled & (~0 if is_dir else FILE_RIGHTS)
            if not allowed:
                return
            attr = _PathBeneathAttr(allowed, target)
            syscall(
                self.number,
                ctypes.c_int(self.fd),
                ctypes.c_int(_RULE_PATH_BENEATH),
                ctypes.byref(attr),
                ctypes.c_uint32(0),
                what=f"landlock_add_rule {path}",
            )
        finally:
            os.close(target)


def _existing(paths: Iterable[str]) -> list[str]:
    found = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.lexists(real) and real != "/" and real not in found:
            found.append(real)
    return found


def _grant_reads_around(adder: _Adder, denied: Sequence[str]) -> None:
    """Read rights on everything except ``denied``: listing on each ancestor of a
    denied path, and full reads on every sibling along the way."""
    ancestors = {"/"}
    for path in denied:
        parent = os.path.dirname(path)
        while parent not in ancestors:
            ancestors.add(parent)
            parent = os.path.dirname(parent)
    blocked = ancestors | set(denied)
    for directory in sorted(ancestors):
        adder.add(directory, READ_DIR)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            path = entry.path
            if path in blocked or os.path.realpath(path) in blocked:
                continue
            adder.add(path, READ)
