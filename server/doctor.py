"""``toolhost doctor``: what works on this machine for this project, in checks.

Each check is ``{name, ok, detail}``: ``ok`` False means something the user should
act on (the detail says what); a missing fallback that is not needed is ok, with
the detail saying so. Checks are functions registered with ``@check``; they get a
``Doctor`` (the project, its config, the sandbox supervisor) and yield ``Check``\\ s,
so a new check needs no change to the command line. Editors show the same list:
Neovim's ``:checkhealth`` and the VS Code status can run ``toolhost doctor --json``.
"""

from __future__ import annotations

import functools
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tools.bash.sandbox import client, landlock
from tools.bash.sandbox import settings as sandbox_settings
from tools.bash.sandbox.plan import Plan, decide
from tools.bash.sandbox.probe import SIMULATE_VAR, Support
from tools.config.files import LoadedConfig
from tools.host import ToolHost


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Doctor:
    """What the checks look at, each part computed once."""

    def __init__(self, worktree: Path) -> None:
        self.worktree = worktree

    @functools.cached_property
    def loaded(self) -> LoadedConfig:
        from tools.worktree import read_config

        return read_config(self.worktree)

    @functools.cached_property
    def host(self) -> ToolHost:
        return ToolHost(self.worktree, config=self.loaded.config)

    @functools.cached_property
    def supervisor(self) -> client.Supervisor | None:
        try:
            return client.supervisor()
        except (client.SupervisorError, OSError):
            return None

    @property
    def support(self) -> Support | None:
        return self.supervisor.support if self.supervisor is not None else None

    @functools.cached_property
    def plan(self) -> Plan:
        service = self.host.permissions
        policy = sandbox_settings.policy(
            self.host.config,
            worktree=self.host.worktree,
            directory=self.host.directory,
            rules=[*service.ruleset("build"), *service.approved],
        )
        return decide(policy, self.support)


CheckFunction = Callable[[Doctor], Iterable[Check]]
CHECKS: list[CheckFunction] = []


def check(function: CheckFunction) -> CheckFunction:
    """Register a check; they run in the order they were registered."""
    CHECKS.append(function)
    return function


def run(worktree: Path) -> list[Check]:
    doctor = Doctor(worktree)
    found: list[Check] = []
    for function in CHECKS:
        try:
            found.extend(function(doctor))
        except Exception as error:  # one broken check must not hide the others
            found.append(Check(function.__name__, False, f"the check itself failed: {error}"))
    return found


# ---------------------------------------------------------------- the checks


@check
def python(doctor: Doctor) -> Iterator[Check]:
    version = ".".join(map(str, sys.version_info[:3]))
    yield Check("python", sys.version_info >= (3, 11), f"Python {version} ({sys.executable})")


@check
def config(doctor: Doctor) -> Iterator[Check]:
    problems = doctor.loaded.config.problems
    if problems:
        detail = "; ".join(str(p) for p in problems) + " (until fixed, edits and commands ask)"
        yield Check("config", False, detail)
    else:
        read = ", ".join(str(p) for p in doctor.loaded.files) or "none found, the defaults apply"
        yield Check("config", True, f"the config files load ({read})")


@check
def sandbox(doctor: Doctor) -> Iterator[Check]:
    plan, support = doctor.plan, doctor.support
    if support is None:
        yield Check("sandbox", False, "its supervisor process could not be started")
        return
    if support.simulated:
        yield Check(
            "sandbox simulation",
            False,
            f"{SIMULATE_VAR} pretends {', '.join(support.simulated)} missing",
        )
    enforced = ", ".join(e for e in plan.enforced if e != "processes") or "nothing"
    if plan.mode == "off":
        yield Check("sandbox", True, "sandbox.mode is off: commands run unsandboxed, as asked")
    elif plan.refused:
        yield Check(
            "sandbox",
            False,
            f"sandbox.mode is required and it cannot be enforced: {plan.refused}; "
            "every command will be refused",
        )
    elif plan.engine == "none":
        yield Check(
            "sandbox",
            False,
            f"commands run UNSANDBOXED (sandbox.mode: auto): {'; '.join(plan.missing)}",
        )
    else:
        yield Check(
            "sandbox",
            True,
            f"commands run under {plan.engine} (mode {plan.mode}, network {plan.network}); "
            f"the kernel enforces: {enforced}",
        )
    for missing in plan.missing if plan.engine != "none" else ():
        yield Check("sandbox gap", False, missing)


@check
def kernel(doctor: Doctor) -> Iterator[Check]:
    support = doctor.support
    if support is None:
        return
    abi = support.landlock_abi
    ok = abi >= landlock.MIN_ABI
    detail = f"Landlock ABI {abi}" if abi else "no Landlock"
    features = [
        ("TCP rules", 4),
        ("device ioctls", 5),
        ("abstract socket scoping", 6),
    ]
    if abi:
        detail += " (" + ", ".join(f"{n}: {'yes' if abi >= v else 'no'}" for n, v in features) + ")"
    yield Check("landlock", ok or bool(support.bwrap), detail)
    userns = "available" if support.userns else "not available"
    notes = [n for n in support.notes if "namespace" in n]
    why = f" ({'; '.join(notes)})" if notes else ""
    needed = "" if support.userns else f"{why}: protected paths and hidden sockets need them"
    yield Check(
        "user namespaces", support.userns, f"unprivileged user namespaces are {userns}{needed}"
    )
    net = "a network namespace" if support.netns else ("seccomp" if support.seccomp else "")
    yield Check(
        "network deny",
        bool(net),
        f"sandbox.network: deny is enforced with {net}"
        if net
        else "sandbox.network: deny cannot be enforced on this machine",
    )
    domains = support.netns and (abi >= landlock.MIN_ABI or bool(support.bwrap))
    why = "; ".join(notes) or (
        "neither Landlock nor bubblewrap works" if support.netns else "no network namespace"
    )
    yield Check(
        "network by domain",
        domains,
        "sandbox.network's domain lists are enforced: a network namespace whose only way "
        "out is toolhost's proxy"
        if domains
        else f"sandbox.network's domain lists cannot be enforced here ({why}): commands "
        "with them get no network at all, and sandbox.mode: required refuses them",
    )
    if support.bwrap:
        yield Check("bubblewrap", True, f"{support.bwrap} works (the engine without Landlock)")
    else:
        found = shutil.which("bwrap")
        need = abi < landlock.MIN_ABI
        detail = (
            f"{found} is installed but does not work here"
            if found
            else "not installed (Debian/Ubuntu: apt install bubblewrap)"
        )
        yield Check(
            "bubblewrap",
            not need,
            detail
            + (
                "; it is the engine where Landlock is missing"
                if need
                else "; only needed where Landlock is missing"
            ),
        )


@check
def ripgrep(doctor: Doctor) -> Iterator[Check]:
    from tools.fsio.rg import rg_path

    try:
        yield Check("ripgrep", True, rg_path())
    except Exception as error:
        yield Check("ripgrep", False, f"grep and glob need ripgrep: {error}")


@check
def js_runtime(doctor: Doctor) -> Iterator[Check]:
    """Which runtime serves JS/TS custom tools: Bun as in OpenCode, else Node.js."""
    from tools.custom.node_runtime import doctor_check

    found = doctor_check()
    yield Check(found["name"], found["ok"], found["detail"])


def format_text(checks: Iterable[Check]) -> str:
    return "\n".join(f"{'ok' if c.ok else '!!'}  {c.name}: {c.detail}" for c in checks)
