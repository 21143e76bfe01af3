"""One bash call's sandbox: what the supervisor can enforce here, the plan built from
the config and the session's rules, the proxy that is its only way out with the domain
lists, and, after a write the sandbox stopped, the folders to offer and the note on
the run that followed; what the guard on new repositories refused, and how a person
can allow one."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from tools.bash import process
from tools.bash.commands import unique
from tools.bash.rerun import FirstRun
from tools.bash.sandbox import client as sandbox_client
from tools.bash.sandbox import denials as sandbox_denials
from tools.bash.sandbox import settings as sandbox_settings
from tools.bash.sandbox.plan import NEW_REPOS, Plan
from tools.bash.sandbox.plan import decide as decide_plan
from tools.bash.sandbox.probe import Support
from tools.config.effective import NetworkLists
from tools.context import ToolContext
from tools.fsio.paths import relative
from tools.network.gate import Gate, Lists
from tools.network.proxy import Proxy
from tools.permission.rules import Rule, wildcard_match

log = logging.getLogger("toolhost.bash")


async def support_here() -> Support | None:
    """What the sandbox can enforce here (starting its supervisor on first use)."""
    try:
        return (await sandbox_client.running()).support
    except (sandbox_client.SupervisorError, OSError):
        log.warning("the sandbox supervisor could not start", exc_info=True)
        return None


def plan_for(
    ctx: ToolContext, support: Support | None, extra: list[str], repos: Sequence[str] = ()
) -> Plan:
    """The call's plan; ``extra`` are outside directories it may also write to, ``repos``
    folders where a person allowed it to make a git repository."""
    policy = sandbox_settings.policy(
        ctx.host.config,
        worktree=ctx.worktree,
        directory=ctx.directory,
        rules=_sandbox_rules(ctx),
        extra_writable=extra,
        repos_allowed=repos,
    )
    return decide_plan(policy, support)


def _sandbox_rules(ctx: ToolContext) -> list[Rule]:
    """The rules the sandbox reads directories from (``external_directory``, ``read``).

    A sub-agent's session has several sides (``tools.agents.policy``): a directory is
    writable only when every side allows it, and unreadable when any side denies it.
    """
    wanted = ("external_directory", "read")
    sides = [
        [r for r in side if any(wildcard_match(p, r.permission) for p in wanted)]
        for side in ctx.rule_sides()
    ]
    if len(sides) == 1:
        return sides[0]
    allowed = set.intersection(
        *(
            set(sandbox_settings.literal_paths(side, "external_directory", "allow"))
            for side in sides
        )
    )
    denied = unique(
        p for side in sides for p in sandbox_settings.literal_paths(side, "read", "deny")
    )
    return [
        *(Rule("external_directory", f"{p}/*", "allow") for p in sorted(allowed)),
        *(Rule("read", p, "deny") for p in denied),
    ]


def network_gate(ctx: ToolContext, plan: Plan, command: str) -> Gate | None:
    """The call's network decisions, when its plan gives it the proxy (the domain lists)."""
    lists = ctx.host.config.sandbox.network
    if not plan.proxy or not isinstance(lists, NetworkLists):
        return None
    return Gate(ctx, Lists.parse(lists.allow, lists.deny), command=command)


def egress(gate: Gate | None) -> Proxy | None:
    """A proxy for one run of the command (a second run gets its own, same gate)."""
    return Proxy(gate) if gate is not None else None


def network_notes(gate: Gate, output: str, plan: Plan) -> list[str]:
    """What the proxy refused, in words for the model; and, when the output shows a
    failed connection or lookup, how commands reach the network at all."""
    lines = [
        f"Network access to {r.host}:{r.port} was refused: {r.reason}."
        for r in gate.refused[: sandbox_denials.MAX_NOTED]
    ]
    if len(gate.refused) > sandbox_denials.MAX_NOTED:
        lines.append(f"({len(gate.refused) - sandbox_denials.MAX_NOTED} more were refused.)")
    if sandbox_denials.network_refused(output, plan) or lines:
        lines.append(
            "Commands reach the network only through toolhost's proxy (HTTP_PROXY, "
            "HTTPS_PROXY and ALL_PROXY point to it): what sandbox.network.allow lists is "
            "reached, what it denies is refused, anything else is asked for. A program that "
            "ignores those variables, and a direct connection to an address, get no "
            "network; names are not resolved inside the sandbox."
        )
    return lines


def network_off_why(ctx: ToolContext, plan: Plan) -> str | None:
    """Why the network is off when the config did not say ``deny`` itself: a broken
    config (failing closed), or domain lists this machine cannot hold."""
    if ctx.host.config.failing_closed:
        return (
            "A config file cannot be read (toolhost list names it), and until it is fixed "
            "commands get no network."
        )
    wanted = sandbox_settings.network_mode(ctx.host.config)
    if wanted == "domains" and plan.network == "deny":
        return (
            "sandbox.network's domain lists cannot be held on this machine (see "
            "metadata.sandbox.missing), so commands get no network at all."
        )
    return None


def directories_to_offer(blocked: list[sandbox_denials.Blocked], plan: Plan) -> list[str]:
    """The folders outside the project the sandbox stopped writes to, each once, that a
    person may make writable for a second run."""
    found: list[str] = []
    for item in blocked:
        if item.kind != "outside":
            continue
        directory = sandbox_denials.directory_to_allow(item.path)
        if directory is not None and directory not in found and directory not in plan.writable:
            found.append(directory)
    return found


def rerun_note(
    directories: list[str],
    first: process.Finished,
    earlier: FirstRun,
    restored: list[str],
    skipped: list[dict[str, str]],
    *,
    repository: bool = False,
) -> str:
    """The note that the output is a second run's, with ``directories`` writable (or,
    ``repository``, allowed to hold a new git repository), and what became of the first
    run's changes."""
    shown = ", ".join(directories)
    stopped, allowed = f"a write to {shown}", "writing there"
    if repository:
        stopped, allowed = f"making a git repository in {shown}", "it"
    note = (
        f"The sandbox stopped {stopped} on the first run (exit {first.exit}); the user "
        f"allowed {allowed}, so the command ran a second time, and the output above is the "
        "second run's."
    )
    if earlier.recorded != "on":
        return note + (
            " What the first run changed inside the project could not be recorded here, so "
            "its effects may have happened twice."
        )
    if restored:
        note += (
            f" Before it, the first run's changes were put back ({_paths(len(restored))}), so "
            "nothing it did happened twice."
        )
    if skipped:
        left = ", ".join(s["path"] for s in skipped)
        note += f" Changed by someone meanwhile, so left as they were: {left}."
    return note


def _paths(count: int) -> str:
    return f"{count} path" if count == 1 else f"{count} paths"


def rejected_note(
    directories: list[str], earlier: FirstRun, worktree: Path, *, to_person: bool = False
) -> str:
    """After the person said no to a second run: what the first one left behind (for the
    model, or, ``to_person``, for the person who said no)."""
    shown = ", ".join(directories)
    who = "You" if to_person else "The user"
    base = f"{who} did not allow writing to {shown}, so the command did not run again."
    if earlier.recorded != "on":
        return base + " What its first run changed in the project could not be recorded here."
    if not earlier.changes:
        return base + " Its first run changed nothing in the project."
    listed = ", ".join(
        f"{relative(Path(c.path), worktree)} ({c.action})" for c in earlier.changes[:10]
    )
    return base + f" Its first run's changes stay: {listed}."


def capture_roots(ctx: ToolContext, plan: Plan) -> list[str]:
    """The writable folders whose changes a turn keeps: the project, ``allowed_dirs`` and
    the folders a person allowed this call (not the package caches or temp folders)."""
    caches = set(sandbox_settings.cache_paths(ctx.host.config))
    roots = [str(ctx.worktree), str(ctx.directory), *ctx.host.config.allowed_dirs]
    roots += [p for p in plan.writable if p not in caches and p not in roots]
    return [p for p in dict.fromkeys(roots) if p != "/dev/shm"]


def guard_outcome(plan: Plan, finished: process.Finished, worktree: Path) -> list[str]:
    """What the guard on new repositories (``tools.bash.sandbox.creations``) did, for the
    model: each repository or symlink it refused and how a person can allow one. Where
    the plan asked for it and the supervisor could not hold it, the plan says so."""
    if "new-repos" in plan.enforced and finished.guard != "on":
        plan.enforced.remove("new-repos")
        plan.missing.append(f"{NEW_REPOS}: {finished.guard or 'the guard did not start'}")
    lines: list[str] = []
    # A missing protected path refused is told with the others (``sandbox_denials``).
    repositories = [r for r in finished.refused if r.get("kind") != "protected"]
    for refused in repositories[: sandbox_denials.MAX_NOTED]:
        path = refused.get("path", "")
        shown = relative(Path(path), worktree)
        if refused.get("kind") == "repository":
            lines.append(
                f"The sandbox refused to make a git repository in {shown} (a .git there, or "
                "a git folder's HEAD beside its objects): "
                "git run outside the sandbox, such as the editor's, obeys a repository's "
                "config and hooks, so commands may not make one in the project. Do not work "
                "around this. If the task needs the repository, ask the user to make it "
                f"(`git init {shown}` or `git clone <url> {shown}` in their own terminal; "
                "commands can then use it, and its config and hooks stay read-only to "
                "them), or to let commands make repositories there with "
                f'"sandbox": {{"repositories": ["{path}"]}} in opencode.json.'
            )
        else:
            lines.append(
                f"The sandbox refused the symlink {shown}: it leads through a folder outside "
                "the project that commands may write (a temp folder, a package cache, a git "
                "folder), where git could find a repository the sandbox does not guard. "
                "Copy the files into the project instead."
            )
    more = len(repositories) - sandbox_denials.MAX_NOTED
    if more > 0:
        lines.append(f"({more} more were refused the same way.)")
    return lines


def refused_repositories(finished: process.Finished) -> list[str]:
    """The folders the guard refused a repository in, to offer a person."""
    return unique([r["path"] for r in finished.refused if r.get("kind") == "repository"])
