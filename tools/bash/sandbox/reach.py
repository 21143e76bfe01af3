"""A seccomp filter that keeps a command's hands off processes it did not start where
Landlock does not reach: their priority (``setpriority``, ``ioprio_set``), scheduling
and CPU affinity (``sched_set*``) and resource limits (``prlimit64``).

Landlock's ptrace rule already refuses ``/proc/<pid>/mem``, ``process_vm_*``, pidfds'
file descriptors and the like, and its signal scope (``zygote``) refuses signals; these
calls check only that the uids match, so without this filter ``renice -n 19`` slows the
editor down and ``prlimit --pid <sidecar> --cpu=0`` ends the sidecar like a kill.

The rule is by target, checked on the arguments: the calling process itself (pid 0),
its own process group for a priority, never a whole user (``PRIO_USER``,
``IOPRIO_WHO_USER``), and a limit may be read of anyone but set only on itself.  So
``nice``, ``ionice -c3 make``, ``taskset -c 0 ./bench`` and ``ulimit`` work; ``renice``
or ``taskset -p`` of another process (a command's own child included) get EPERM.
32-bit calls on a 64-bit kernel are checked with their own numbers, x32 ones as native.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import errno

from tools.bash.sandbox.seccomp import RET_ALLOW, RET_ERRNO, Insn, assemble, jeq, load
from tools.bash.sandbox.syscalls import arch

PRIO_USER = 2
IOPRIO_WHO_USER = 3

# (setpriority, ioprio_set, prlimit64, [sched_setparam, sched_setscheduler,
# sched_setaffinity, sched_setattr]) by ABI: native, then the 32-bit one a 64-bit kernel runs.
_NUMBERS = {
    "x86_64": (141, 251, 302, (142, 144, 203, 314)),
    "aarch64": (140, 30, 261, (118, 119, 122, 274)),
    "riscv64": (140, 30, 261, (118, 119, 122, 274)),
}
_COMPAT = {
    "x86_64": (0x40000003, (97, 289, 340, (154, 156, 241, 351))),  # i386
    "aarch64": (0x40000028, (97, 314, 369, (154, 156, 241, 380))),  # arm
}
# seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 * i (low word first).
_ARG = (16, 24, 32)
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K


def _zero(arg: int, otherwise: str) -> list[str | Insn]:
    """Fall through when argument ``arg`` is 0 (both words), else jump to ``otherwise``."""
    return [load(_ARG[arg]), jeq(0, 0, otherwise), load(_ARG[arg] + 4), jeq(0, 0, otherwise)]


def _block(
    label: str, numbers: tuple[int, int, int, tuple[int, ...]], x32: int = 0
) -> list[str | Insn]:
    setpriority, ioprio_set, prlimit64, on_pid = numbers
    out: list[str | Insn] = [label, load(0)]
    if x32:  # x86-64's x32 calls: the same numbers with this bit set
        out.append((_AND, ~x32 & 0xFFFFFFFF, 0, 0))
    out += [jeq(setpriority, f"{label}-prio", 0), jeq(ioprio_set, f"{label}-io", 0)]
    out.append(jeq(prlimit64, f"{label}-limit", 0))
    out += [jeq(number, f"{label}-pid", 0) for number in on_pid]
    out.append(jeq(0xFFFFFFFF, "deny", "allow"))  # any other call: allowed
    for name, everyone in (("prio", PRIO_USER), ("io", IOPRIO_WHO_USER)):
        out += [f"{label}-{name}", *_zero(1, "deny"), load(_ARG[0]), jeq(everyone, "deny", "allow")]
    out += [f"{label}-pid", *_zero(0, "deny"), jeq(0, "allow", "allow")]
    # prlimit64(pid, resource, new, old): any pid when only reading (new is NULL).
    out += [f"{label}-limit", *_zero(0, f"{label}-set"), jeq(0, "allow", "allow")]
    out += [f"{label}-set", *_zero(2, "deny"), jeq(0, "allow", "allow")]
    return out


def program() -> bytes | None:
    """The filter's BPF instructions, or None where this architecture is not known."""
    machine = arch()
    if machine is None or machine.name not in _NUMBERS:
        return None
    compat = _COMPAT.get(machine.name)
    source: list[str | Insn] = [load(4), jeq(machine.audit, "native", 0)]
    source.append(jeq(compat[0], "compat", "allow") if compat else jeq(0, "allow", "allow"))
    source += _block("native", _NUMBERS[machine.name], machine.x32_bit)
    if compat:
        source += _block("compat", compat[1])
    source += ["allow", (0x06, RET_ALLOW, 0, 0), "deny", (0x06, RET_ERRNO | errno.EPERM, 0, 0)]
    return assemble(source)
