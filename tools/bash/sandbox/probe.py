"""What this machine's kernel lets an unprivileged process do, found by trying it.

Each mechanism is tried for real, once per supervisor: Landlock's ABI version, a
user + mount + network namespace with read-only bind mounts and a read-only root (in
a forked child, since ``unshare(CLONE_NEWUSER)`` refuses a multi-threaded caller),
seccomp, and bubblewrap running ``true``.

``TOOLHOST_SANDBOX_SIMULATE`` pretends some of them are missing, for tests and for
trying the fallbacks: a comma-separated list of ``no-landlock``, ``no-userns``,
``no-seccomp``, ``no-bwrap``, ``no-scope`` (no shared signal scope: ``zygote``),
``no-repo-guard`` (new names in the project not made by the supervisor, so a command
can make a repository: ``creations``), or ``none`` for all. It only ever takes
mechanisms away, and is read from the supervisor's environment (the sidecar's), which
a command run by the agent cannot change.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

from tools.bash.sandbox import landlock, namespaces
from tools.bash.sandbox.syscalls import CLONE_NEWNET, arch, unshare

SIMULATE_VAR = "TOOLHOST_SANDBOX_SIMULATE"
# Not a mechanism: the supervisor's making of new names (``creations``), taken away.
GUARD_OFF = "no-repo-guard"
SIMULATIONS = frozenset(
    {"no-landlock", "no-userns", "no-seccomp", "no-bwrap", "no-scope", GUARD_OFF}
)

_NAMESPACES_OK = 0
_NO_USERNS = 10
_NO_NETNS = 11
_NO_MOUNT = 12


@dataclass
class Support:
    landlock_abi: int = 0
    userns: bool = False  # user + mount namespaces, with read-only bind mounts
    netns: bool = False  # and a network namespace
    seccomp: bool = False  # the network filter (this architecture is known)
    bwrap: str | None = None  # path of a bubblewrap that works here
    simulated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why something is missing
    # Sandboxed commands share a Landlock domain scoping signals (``zygote``): set by
    # the supervisor once its zygote runs, not by ``probe``.
    scoped: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Support:
        return cls(**data)


def simulated() -> frozenset[str]:
    value = os.environ.get(SIMULATE_VAR, "")
    names = {part.strip() for part in value.split(",") if part.strip()}
    if "none" in names:
        return SIMULATIONS
    return frozenset(names & SIMULATIONS)


def probe() -> Support:
    """Try everything (takes a few milliseconds, plus bubblewrap's start when present)."""
    missing = simulated()
    support = Support(simulated=sorted(missing))
    names = {
        "no-landlock": "Landlock",
        "no-userns": "user namespaces",
        "no-seccomp": "seccomp",
        "no-bwrap": "bubblewrap",
        "no-scope": "Landlock's signal scope",
        GUARD_OFF: "the guard on new repositories",
    }
    for name in sorted(missing):
        support.notes.append(f"{names[name]} simulated missing ({SIMULATE_VAR})")
    if "no-landlock" not in missing:
        support.landlock_abi = landlock.abi_version()
        if support.landlock_abi == 0:
            support.notes.append("this kernel has no Landlock (or it is not enabled at boot)")
        elif support.landlock_abi < landlock.MIN_ABI:
            support.notes.append(
                f"this kernel's Landlock is ABI {support.landlock_abi}; toolhost needs "
                f"{landlock.MIN_ABI} (Linux 6.2) or later"
            )
    if "no-userns" not in missing:
        result = _try_namespaces()
        support.userns = result in (_NAMESPACES_OK, _NO_NETNS)
        support.netns = result == _NAMESPACES_OK
        if result == _NO_USERNS:
            support.notes.append("unprivileged user namespaces are turned off on this system")
        elif result == _NO_MOUNT:
            support.notes.append("a user namespace cannot make read-only bind mounts here")
        elif result == _NO_NETNS:
            support.notes.append("a user namespace cannot make a network namespace here")
    if "no-seccomp" not in missing:
        support.seccomp = arch() is not None and _has_seccomp()
    if "no-bwrap" not in missing:
        support.bwrap = _try_bwrap()
    return support


def _try_namespaces() -> int:
    """Fork a child that sets up what a command gets; its exit code says how far it got."""
    with tempfile.TemporaryDirectory(prefix="toolhost-probe-") as scratch:
        pid = os.fork()
        if pid == 0:  # the child: only system calls, then _exit
            code = _NO_USERNS
            try:
                namespaces.enter(os.getuid(), os.getgid(), network=False)
                code = _NO_MOUNT
                namespaces.read_only(scratch)
                namespaces.writable_only([scratch])
                code = _NO_NETNS
                unshare(CLONE_NEWNET)
                code = _NAMESPACES_OK
            except BaseException:  # report how far it got, whatever failed
                pass
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _has_seccomp() -> bool:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp:") for line in status)
    except OSError:
        return False


def _try_bwrap() -> str | None:
    path = shutil.which("bwrap")
    if path is None:
        return None
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if done.returncode == 0 else None
