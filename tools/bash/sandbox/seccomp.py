"""A seccomp filter that refuses network sockets: ``network: deny`` without a namespace.

Where no network namespace can be made (unprivileged user namespaces are off),
Landlock's TCP rules stop TCP only; this filter makes ``socket(2)`` fail with
EACCES for every family but Unix and netlink sockets, so no UDP, ICMP, raw or
other packet can be sent either, and refuses ``io_uring_setup`` (io_uring can
open sockets without the ``socket`` system call). 32-bit system calls on a 64-bit
kernel (``socketcall``) and x86-64's x32 calls are checked too.

Unix sockets on the filesystem stay reachable (as they do in a network
namespace): a program listening on one can still be asked to reach the network.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from tools.bash.sandbox.syscalls import (
    PR_SET_NO_NEW_PRIVS,
    PR_SET_SECCOMP,
    arch,
    prctl,
    prctl_pointer,
)

SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K

AF_UNIX = 1
AF_NETLINK = 16

# (audit arch, socket, socketcall or -1, io_uring_setup) of the 32-bit ABI a
# 64-bit kernel also runs.
_COMPAT = {
    "x86_64": (0x40000003, 359, 102, 425),  # i386
    "aarch64": (0x40000028, 281, -1, 425),  # arm
}


# An instruction with symbolic jumps: an int is relative, a str names a label.
_Jump = int | str
Insn = tuple[int, int, _Jump, _Jump]


def load(offset: int) -> Insn:
    """A = the 32-bit word at ``offset`` in seccomp_data."""
    return (_LD_ABS, offset, 0, 0)


def jeq(value: int, then: _Jump, otherwise: _Jump) -> Insn:
    return (_JEQ, value, then, otherwise)


def _abi_block(
    label: str, socket_nr: int, socketcall: int, io_uring: int, x32: int
) -> list[str | Insn]:
    """Checks for one system call ABI: deny io_uring, socketcall and non-local sockets."""
    block: list[str | Insn] = [label, (_LD_ABS, 0, 0, 0)]  # seccomp_data.nr
    if x32:
        block.append((_JGE, x32, "deny", 0))
    block.append((_JEQ, io_uring, "deny", 0))
    if socketcall >= 0:
        block.append((_JEQ, socketcall, "deny", 0))
    block.append((_JEQ, socket_nr, 0, "allow"))
    block.append((_LD_ABS, 16, 0, 0))  # args[0] (the family), low 32 bits
    block.append((_JEQ, AF_UNIX, "allow", 0))
    block.append((_JEQ, AF_NETLINK, "allow", "deny"))
    return block


def program() -> bytes | None:
    """The filter's BPF instructions, or None where this architecture is not known."""
    machine = arch()
    if machine is None:
        return None
    compat = _COMPAT.get(machine.name)
    source: list[str | Insn] = [(_LD_ABS, 4, 0, 0)]  # seccomp_data.arch
    source.append((_JEQ, machine.audit, "native", 0))
    source.append(
        (_JEQ, compat[0], "compat", "deny") if compat else (_RET, RET_ERRNO | errno.ENOSYS, 0, 0)
    )
    source += _abi_block("native", machine.socket, -1, machine.io_uring_setup, machine.x32_bit)
    if compat:
        source += _abi_block("compat", compat[1], compat[2], compat[3], 0)
    source += ["allow", (_RET, RET_ALLOW, 0, 0), "deny", (_RET, RET_ERRNO | errno.EACCES, 0, 0)]
    return assemble(source)


def assemble(source: list[str | Insn]) -> bytes:
    labels: dict[str, int] = {}
    insns: list[Insn] = []
    for item in source:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def resolve(jump: _Jump, index: int) -> int:
        return labels[jump] - index - 1 if isinstance(jump, str) else jump

    return b"".join(
        struct.pack("=HBBI", code, resolve(jt, i), resolve(jf, i), k)
        for i, (code, k, jt, jf) in enumerate(insns)
    )


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(code: bytes) -> None:
    """In the child: refuse network sockets from now on (needs no_new_privs first)."""
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Filter(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    prctl(PR_SET_NO_NEW_PRIVS, 1, what="prctl(PR_SET_NO_NEW_PRIVS)")
    prctl_pointer(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.pointer(fprog), "seccomp")
