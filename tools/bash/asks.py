"""The permission asks of a bash call: the rules' decision on every command the line
runs (deny first), the ask for directories outside the project, the ``bash`` ask,
and the asks to run again with folders the sandbox stopped a write to, or with a git
repository the sandbox refused to make."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tools.bash.commands import Analysis, Effective, unique
from tools.bash.decision import Decision, Denial, decide
from tools.bash.effects import Effects, effects
from tools.checkpoints.summary import PathChange
from tools.context import ToolContext
from tools.errors import PermissionDeniedError, PermissionRejectedError
from tools.fsio.paths import is_inside, locations, real, relative
from tools.permission.asks import PermissionReply
from tools.permission.rules import Rule, wildcard_match

ASK_TITLE_CHARS = 80  # of the command, in a permission prompt's title

# Devices every command line may read or write (2>/dev/null) without an ask.
HARMLESS_DEVICES = frozenset(
    f"/dev/{name}" for name in ("null", "zero", "full", "random", "urandom", "tty")
) | frozenset(f"/dev/std{name}" for name in ("in", "out", "err"))


async def ask_to_run(
    analysis: Analysis,
    workdir: Path,
    command: str,
    description: str | None,
    ctx: ToolContext,
    *,
    strict: bool,
) -> list[str]:
    """Ask what the rules say to; return the outside directories this call may write to:
    the ones it names as write targets, when a person allowed them just now.

    A rule that allowed them without a person is not enough: only a literal rule makes a
    folder writable for the kernel (``sandbox.settings``), so a wildcard rule (``"allow"``,
    ``"*"``) cannot turn what the parser read in the line (``cp x ~/``) into a writable
    home folder for every writer in it.

    ``strict``: the kernel does not hold the command's writes, so a path only known
    when it runs makes the command unknown.
    """
    found = await ctx.run_blocking(_effects, analysis, workdir, strict)
    for text, why in found.unknown:
        analysis.commands.append(Effective(text=text, unknown=[why]))
    _decide(analysis, ctx)
    roots = (real(ctx.directory), real(ctx.worktree))
    outside, written = await ctx.run_blocking(_outside_dirs, found, workdir, roots)
    answered = None
    if outside:
        globs = [f"{d.as_posix().rstrip('/')}/*" for d in outside]
        answered = await ctx.ask(
            "external_directory",
            globs,
            globs,
            {
                "command": command,
                "workdir": str(workdir),
                "directories": [str(d) for d in outside],
            },
            title=f"Access files outside the project: {', '.join(globs)}",
        )
    # Again: the rules may have changed while the user answered.
    decision = _decide(analysis, ctx)
    metadata: dict[str, Any] = {
        "command": command,
        "workdir": str(workdir),
        "description": description,
    }
    if analysis.parse_error:
        metadata["parseError"] = True
    if decision.unknown:
        metadata["unknown"] = decision.unknown
    title = _ask_title(command, workdir, ctx)
    if decision.needs_ask:
        await ctx.ask("bash", decision.patterns, decision.always, metadata, title=title)
    elif decision.force:
        await _ask_regardless(ctx, decision.patterns, metadata, title)
    return [str(d) for d in granted(written, answered)]


def granted(written: list[Path], answered: PermissionReply | None) -> list[Path]:
    """The write targets a person allowed (``answered``); none when only rules did."""
    return written if answered is not None else []


def _ask_title(command: str, workdir: Path, ctx: ToolContext) -> str:
    """``Run `npm test` in src/``: the prompt's title (its metadata has the whole line)."""
    lines = command.strip().splitlines() or [""]
    shown = lines[0] if len(lines) == 1 else lines[0] + " …"
    if len(shown) > ASK_TITLE_CHARS:
        shown = shown[: ASK_TITLE_CHARS - 1].rstrip() + "…"
    where = relative(workdir, ctx.worktree)
    place = "the project root" if where == "." else where.rstrip("/") + "/"
    return f"Run `{shown}` in {place}"


def _decide(analysis: Analysis, ctx: ToolContext) -> Decision:
    """The rules' decision; raises when one denies.  A sub-agent's session has several
    rulesets (its parent's and its own): each must allow, an ask in any asks."""
    decisions = []
    for rules in ctx.rule_sides():
        decision = decide(analysis, rules)
        if decision.denial is not None:
            raise _denied(decision.denial, rules)
        decisions.append(decision)
    first = decisions[0]
    return replace(
        first,
        patterns=unique(p for d in decisions for p in d.patterns),
        needs_ask=any(d.needs_ask for d in decisions),
        force=any(d.force for d in decisions),
    )


def _denied(denial: Denial, rules: list[Rule]) -> PermissionDeniedError:
    rule = denial.rule
    if denial.reason:
        what = (
            f"`{denial.command}` runs a command that is only known when it runs "
            f"({denial.reason}), and the rule `{rule.pattern}` denies every command the "
            "configuration does not allow by name"
        )
    elif denial.matched in (denial.command, ""):
        what = f"the rule `{rule.pattern}` denies `{denial.command}`"
    else:
        what = f"`{denial.command}` runs `{denial.matched}`, which the rule `{rule.pattern}` denies"
    relevant = [r.to_wire() for r in rules if wildcard_match("bash", r.permission)]
    return PermissionDeniedError(
        "The user has specified a rule which prevents you from using this specific tool "
        f"call: {what}. Nothing was run. Do not try to run it another way; do the task "
        "without it, or ask the user to run it. Here are some of the relevant rules "
        f"{json.dumps(relevant)}",
        metadata={"rule": rule.to_wire(), "command": denial.command, "matched": denial.matched},
    )


async def _ask_regardless(
    ctx: ToolContext, patterns: list[str], metadata: dict[str, Any], title: str
) -> None:
    """Ask a person even where the rules allow it: the rules cannot see what will run.

    No "always" is offered, so nothing is approved for next time.
    """
    await ctx.ask("bash", patterns, [], metadata, title=title, force=True)


def _outside_dirs(
    found: Effects, workdir: Path, roots: tuple[Path, ...]
) -> tuple[list[Path], list[Path]]:
    """Directories outside ``roots`` that the line touches, in order, each once; and
    those of them it writes to."""
    outside: list[Path] = []
    written: list[Path] = []

    def note(path: Path, is_dir: bool, writes: bool) -> None:
        if any(is_inside(path, root) for root in roots):
            return
        # a new path counts as a file in its parent, unless written as a directory (x/)
        directory = path if is_dir or path.is_dir() else path.parent
        if directory not in outside:
            outside.append(directory)
        if writes and directory not in written:
            written.append(directory)

    note(real(workdir), True, True)
    for touched in found.paths:
        if os.path.normpath(touched.path) in HARMLESS_DEVICES:
            continue
        for path in locations(touched.path, workdir):
            note(path, touched.is_dir, touched.writes)
    return outside, written


def _effects(analysis: Analysis, workdir: Path, strict: bool) -> Effects:
    return effects(analysis, workdir, os.environ, strict=strict, variables=analysis.variables)


def _first_run_changes(changed: Sequence[PathChange], worktree: Path) -> list[dict[str, str]]:
    """What a command's first run changed, as an ask's ``firstRun`` (for the person)."""
    return [{"path": relative(Path(c.path), worktree), "action": c.action} for c in changed]


async def allow_writing(
    directories: list[str],
    command: str,
    ctx: ToolContext,
    first_run: str = "",
    changed: Sequence[PathChange] = (),
) -> bool:
    """One ask: may the command run again with these directories writable? Asked even
    where the rules allow (running it again is the person's call); a deny rule wins.
    ``first_run`` says, for the person, what the first run changed and what happens to it."""
    globs = [f"{d.rstrip('/')}/*" for d in directories]
    shown = ", ".join(directories)
    rest = f"; {first_run}" if first_run else ""
    try:
        await ctx.ask(
            "external_directory",
            globs,
            globs,
            {
                "command": command,
                "directories": directories,
                "sandbox": "write",
                "rerun": True,
                "firstRun": _first_run_changes(changed, ctx.worktree),
            },
            title=f"Allow writing to {shown} for this command? It will run again{rest}",
            force=True,
        )
    except (PermissionRejectedError, PermissionDeniedError):
        return False
    return True


async def allow_repositories(
    folders: list[str],
    command: str,
    ctx: ToolContext,
    first_run: str = "",
    changed: Sequence[PathChange] = (),
) -> bool | None:
    """One ask, never remembered: may the command run again, allowed to make a git
    repository in ``folders`` (``tools.bash.sandbox.creations``)? A repository's config
    and hooks are obeyed by git outside the sandbox, so only a person says yes; a
    ``bash`` deny rule for the command wins. None: no one could be asked."""
    shown = ", ".join(relative(Path(f), ctx.worktree) for f in folders)
    rest = f"; {first_run}" if first_run else ""
    try:
        await ctx.ask(
            "bash",
            [command],
            [],
            {
                "command": command,
                "directories": folders,
                "sandbox": "repository",
                "rerun": True,
                "firstRun": _first_run_changes(changed, ctx.worktree),
            },
            title=(
                f"Allow this command to make a git repository in {shown}? Git outside the "
                f"sandbox (the editor's) will obey its config and hooks. It will run again{rest}"
            ),
            force=True,
        )
    except PermissionRejectedError as error:
        # A client that answers no prompts rejects every ask (``headless_rejection``).
        return None if "no one could be asked" in error.message else False
    except PermissionDeniedError:
        return None
    return True
