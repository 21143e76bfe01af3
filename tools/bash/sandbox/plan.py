"""From what a command should be kept to (``Policy``) and what the machine can do
(``Support``) to what it gets (``Plan``): the engine, and what is enforced.

Engines, best first:

- ``landlock``: Landlock for writes (and denied reads); with user namespaces also a
  mount namespace (protected paths read-only, hidden paths) and, for
  ``network: deny``, a network namespace; without them, ``network: deny`` is
  Landlock's TCP rules plus a seccomp filter on socket families. For
  ``network: domains`` (the domain lists), a network namespace whose only way out is
  a listener on its loopback that the sidecar's proxy serves (``tools.network``);
  without a network namespace it cannot be, and the command gets no network at all.
- ``bwrap``: bubblewrap, where Landlock is missing: the whole filesystem bound
  read-only but for the writable paths, protected paths re-bound read-only, hidden
  paths covered, ``--unshare-net``.
- ``none``: nothing. ``mode: auto`` runs the command anyway and says so;
  ``mode: required`` refuses to run it; ``mode: off`` always chooses this.

``enforced`` names what the kernel holds the command to, from this list:
``fs-write`` (writes only in the writable paths; with a mount namespace, nothing
else's mode, owner, times or attributes change either), ``fs-read`` (the denied paths
cannot be read), ``protected`` (protected paths are read-only), ``network`` (no
network at all, loopback included; with ``domains``: no way out but toolhost's proxy),
``signals`` (no signal, priority, scheduling or limit change reaches a process the
sandboxed commands did not start: ``zygote`` and ``reach``), ``new-repos`` (no name
is made in the guarded folders but by the supervisor, which never makes a ``.git``:
``creations``; Landlock only) and ``processes`` (every process the command starts is
found and ended with it; the supervisor does this for every engine).
``missing`` says, in words, what the policy asked for and could not be enforced.
``mode: required`` refuses a command unless ``fs-write`` (and, for
``network: deny``, ``network``; for ``domains``, the proxy) is enforced; the rest is
reported, never refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tools.bash.sandbox import masks
from tools.bash.sandbox.landlock import MIN_ABI
from tools.bash.sandbox.probe import GUARD_OFF, Support

Mode = Literal["auto", "required", "off"]
Network = Literal["allow", "deny", "domains"]
Engine = Literal["landlock", "bwrap", "none"]

MODES: tuple[Mode, ...] = ("auto", "required", "off")
NETWORKS: tuple[Network, ...] = ("allow", "deny", "domains")

# Device files every shell may read and write (and ioctl): what `2>/dev/null`,
# `script` and a terminal-curious program need. /dev/shm is writable (POSIX shared
# memory and semaphores: Python's multiprocessing, Chromium).
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
)
SHARED_MEMORY = "/dev/shm"


@dataclass(frozen=True)
class Policy:
    """What the config wants for one command (paths absolute)."""

    mode: Mode = "auto"
    network: Network = "allow"
    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()  # read-only even inside a writable path
    read_denied: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()  # covered where a mount namespace can (sockets)
    # Never to be read (tokens): hidden with a mount namespace, else denied to Landlock
    # (which costs a rule per sibling on the way, so only where it must).
    secrets: tuple[str, ...] = ()
    # Writable folders where a new name is made only by the supervisor, never ``.git``
    # (``creations``): the project and the folders config or a person made writable.
    guarded: tuple[str, ...] = ()
    # Folders in those where names are made freely: the repositories' git dirs.
    free: tuple[str, ...] = ()
    # Folders where a person allowed this command to make a repository.
    repos_allowed: tuple[str, ...] = ()


@dataclass
class Plan:
    mode: Mode
    engine: Engine
    network: Network
    enforced: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    refused: str | None = None  # mode required and something asked for is missing
    writable: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)  # existing when planned
    masked: list[str] = field(default_factory=list)  # missing: placeholders (``masks``)
    pinned: list[str] = field(default_factory=list)  # their parents, made mount points
    read_denied: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    landlock_abi: int = 0
    namespaces: bool = False  # user + mount namespace
    netns: bool = False
    # network "domains": the namespace's loopback gets a listener the sidecar's proxy serves
    proxy: bool = False
    seccomp: bool = False
    bwrap: str | None = None
    # Keep what the command changes (tools.bash.sandbox.capture): {folder, roots, skip}.
    capture: dict[str, Any] | None = None
    # New names: made by the supervisor in ``guarded`` (``creations``); every writable
    # folder not in them is ``free`` (the supervisor adds the command's temp dir).
    guarded: list[str] = field(default_factory=list)
    free: list[str] = field(default_factory=list)
    repos_allowed: list[str] = field(default_factory=list)
    # Missing protected paths in ``guarded`` folders: no placeholder, the supervisor
    # refuses to make them (``creations``), with or without a mount namespace.
    unmade: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(**data)

    def summary(self) -> dict[str, Any]:
        """``metadata.sandbox`` of a bash result."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "engine": self.engine,
            "enforced": list(self.enforced),
            "network": self.network,
        }
        if self.missing:
            out["missing"] = list(self.missing)
        return out


def holds_writes(mode: Mode, support: Support | None) -> bool:
    """Whether ``decide`` would enforce ``fs-write`` (without looking at any path)."""
    if mode == "off" or support is None:
        return False
    return support.landlock_abi >= MIN_ABI or bool(support.bwrap)


def decide(policy: Policy, support: Support | None) -> Plan:
    """The plan for one command; ``support`` None: no supervisor, nothing can be enforced."""
    plan = Plan(mode=policy.mode, engine="none", network=policy.network)
    if support is not None:
        plan.enforced.append("processes")
    if policy.mode == "off":
        return plan
    notes = "; ".join(support.notes) if support and support.notes else ""
    if support is None:
        plan.missing.append("the sandbox: its supervisor process could not be started")
    elif support.landlock_abi >= MIN_ABI:
        _landlock(plan, policy, support)
    elif support.bwrap:
        _bwrap(plan, policy, support)
    else:
        why = f" ({notes})" if notes else ""
        plan.missing.append(f"the sandbox: neither Landlock nor bubblewrap is available{why}")
    if plan.engine != "none" and support is not None:
        if support.scoped and support.seccomp:
            plan.enforced.append("signals")
        elif not support.scoped:
            plan.missing.append(
                "signals: commands can still signal processes outside the sandbox "
                "(the editor, the sidecar): this needs Landlock ABI 6 (Linux 6.12)"
            )
        else:
            plan.missing.append(
                "signals: commands can still change the priority, scheduling and limits "
                "of processes outside the sandbox: seccomp is not available"
            )
    essential = ["fs-write", *(["network"] if policy.network != "allow" else [])]
    held = all(e in plan.enforced for e in essential)
    if policy.network == "domains" and not plan.proxy:
        held = False  # no network at all is stricter, but not what was asked for
    if policy.mode == "required" and not held:
        plan.refused = "; ".join(plan.missing)
    return plan


def _paths(plan: Plan, policy: Policy) -> None:
    resolved: dict[str, str] = {}  # the folders these lists share, resolved once
    plan.writable = _unique(_existing(policy.writable, resolved))
    plan.devices = [*DEVICES]
    if os.path.isdir(SHARED_MEMORY):
        plan.writable.append(SHARED_MEMORY)
    plan.read_denied = _unique(_existing(policy.read_denied, resolved))
    plan.protected = _unique(_existing(policy.protected, resolved))
    plan.masked = masks.to_mask(list(policy.protected))
    plan.hidden = _unique(_existing([*policy.hidden, *policy.secrets], resolved))
    plan.pinned = _pins(plan.protected, plan.writable)


def _landlock(plan: Plan, policy: Policy, support: Support) -> None:
    plan.engine = "landlock"
    plan.landlock_abi = support.landlock_abi
    _paths(plan, policy)
    plan.enforced.append("fs-write")
    plan.namespaces = support.userns
    if support.userns:
        if plan.protected or plan.masked:
            plan.enforced.append("protected")
    else:
        plan.missing.append(
            _without_userns(
                "modes, owners, times and attributes of files outside the writable "
                "folders can still be changed",
                support,
            )
        )
        if plan.protected:
            plan.missing.append(_without_userns("protected paths are not read-only", support))
        secrets = _existing(policy.secrets)
        if set(plan.hidden) - set(secrets):
            plan.missing.append(_without_userns("hidden paths can still be reached", support))
        plan.read_denied = _unique([*plan.read_denied, *secrets])
        plan.protected, plan.pinned, plan.hidden, plan.masked = [], [], [], []
    if plan.read_denied and "fs-read" not in plan.enforced:
        plan.enforced.append("fs-read")
    _guard_creations(plan, policy, support)
    if policy.network == "domains" and support.netns:
        plan.netns = plan.proxy = True
        plan.enforced.append("network")
    elif policy.network != "allow":
        if policy.network == "domains":
            plan.missing.append(_no_domains(support))
            plan.network = "deny"
        if support.netns:
            plan.netns = True
            plan.enforced.append("network")
        elif support.seccomp:
            plan.seccomp = True
            plan.enforced.append("network")
        else:
            plan.missing.append("network: no network namespace or seccomp filter is available")


def _bwrap(plan: Plan, policy: Policy, support: Support) -> None:
    plan.engine = "bwrap"
    plan.bwrap = support.bwrap
    _paths(plan, policy)
    plan.devices = []  # bubblewrap makes its own /dev
    plan.writable = [p for p in plan.writable if p != SHARED_MEMORY]
    plan.enforced.append("fs-write")
    if plan.read_denied:
        plan.enforced.append("fs-read")
    if plan.protected or plan.masked:
        plan.enforced.append("protected")
    if policy.guarded:
        plan.missing.append(f"{NEW_REPOS}: it needs Landlock")
    if policy.network == "domains" and support.netns:
        # The child makes the network namespace (and the proxy's listener in it) and
        # runs bubblewrap inside it, without a namespace of bubblewrap's own.
        plan.proxy = True
        plan.enforced.append("network")
    elif policy.network != "allow":
        if policy.network == "domains":
            plan.missing.append(_no_domains(support))
            plan.network = "deny"
        plan.netns = True
        plan.enforced.append("network")


NEW_REPOS = (
    "new repositories: a command can make a git repository in the project (git init, a "
    ".git file) whose config git outside the sandbox obeys"
)


def _guard_creations(plan: Plan, policy: Policy, support: Support) -> None:
    """New names in the project through the supervisor (``creations``): its folders,
    and those config or a person made writable, are guarded; the other writable
    folders and the git dirs in guarded ones are free."""
    if not policy.guarded:
        return
    if not support.seccomp or GUARD_OFF in support.simulated:
        why = "seccomp is not available" if not support.seccomp else "simulated missing"
        plan.missing.append(f"{NEW_REPOS}: {why}")
        return
    guarded = _unique(_existing(policy.guarded))
    free = [w for w in plan.writable if w not in guarded]
    # Landlock grants by hierarchy: a free folder holding a guarded one is guarded too.
    holders = [f for f in free if any(inside(g, f) for g in guarded)]
    plan.guarded = guarded + holders
    plan.free = [f for f in free if f not in holders]
    plan.free += [f for f in _existing(policy.free) if any(inside(f, g) for g in plan.guarded)]
    plan.repos_allowed = _unique(os.path.realpath(p) for p in policy.repos_allowed)
    plan.enforced.append("new-repos")
    # Without user namespaces nothing was masked, and these are found only for the guard.
    missing = plan.masked if plan.namespaces else masks.to_mask(list(policy.protected))
    plan.unmade = [p for p in missing if guards(os.path.dirname(p), plan.guarded, plan.free)]


def guards(folder: str, guarded: Iterable[str], free: Iterable[str]) -> bool:
    """Whether a new name in ``folder`` is made only by the supervisor (``creations``):
    inside a guarded folder and not inside a free one."""
    if any(inside(folder, f) for f in free):
        return False
    return any(inside(folder, g) for g in guarded)


def _no_domains(support: Support) -> str:
    why = next((n for n in support.notes if "namespace" in n), "")
    return (
        "network by domain: it needs a network namespace "
        f"({why or 'user namespaces are not available'}); commands get no network at all"
    )


def _without_userns(what: str, support: Support) -> str:
    why = next((n for n in support.notes if "namespace" in n), "")
    return f"{what}: {why or 'user namespaces are not available'}"


def _pins(protected: Iterable[str], writable: Iterable[str]) -> list[str]:
    """Each protected path's parents up to (and including) the writable root it is in:
    as mount points they cannot be renamed, so the protected path cannot be moved away."""
    roots = sorted(writable, key=len, reverse=True)
    pins: list[str] = []
    for path in protected:
        root = next((r for r in roots if inside(path, r)), None)
        if root is None:
            continue
        parent = os.path.dirname(path)
        while inside(parent, root):
            if parent not in pins:
                pins.append(parent)
            if parent == root:
                break
            parent = os.path.dirname(parent)
    return sorted(pins, key=len)  # outer first: an inner mount must come after


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _existing(paths: Iterable[str], resolved: dict[str, str] | None = None) -> list[str]:
    """The paths that exist, symlinks resolved (one stat for each that does not).

    A plan resolves a hundred paths or more (a repository's hooks, config and info under
    the same ``.git``), and ``os.path.realpath`` takes an ``lstat`` per part of each: the
    folders they share are resolved once here instead (``resolved``: those already
    resolved for this plan).
    """
    if resolved is None:
        resolved = {}
    found = []
    for path in paths:
        try:
            info = os.lstat(path)  # os.path.lexists, keeping what it learns
        except (OSError, ValueError):
            continue
        found.append(_real(path, info, resolved))
    return found


def _real(path: str, info: os.stat_result, resolved: dict[str, str]) -> str:
    """``os.path.realpath(path)`` of an existing ``path`` (``info``: its ``lstat``), its
    folders taken from, or added to, ``resolved``."""
    parts = path.split("/")
    if parts[0] or "" in parts[1:] or "." in parts or ".." in parts:
        return os.path.realpath(path)  # relative, `.`, `..`, extra slashes: realpath's own way
    parent, name = os.path.split(path)
    real_parent = _resolve(parent, resolved)
    if real_parent == parent:  # no link above it: its own lstat says whether it is one
        return os.path.realpath(path) if stat.S_ISLNK(info.st_mode) else path
    here = os.path.join(real_parent, name)
    return os.path.realpath(here) if os.path.islink(here) else here


def _resolve(path: str, resolved: dict[str, str]) -> str:
    """A plain absolute path's real path, its parent's taken from ``resolved`` if there."""
    known = resolved.get(path)
    if known is not None:
        return known
    parent, name = os.path.split(path)
    if not name:  # the root
        return path
    here = os.path.join(_resolve(parent, resolved), name)
    real = os.path.realpath(here) if os.path.islink(here) else here
    resolved[path] = real
    return real


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))
