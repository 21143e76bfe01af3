"""``bash``: run a command line in a shell (reference §3.5, §6.6).

Before anything runs, the line is analysed (tools/bash/ (walker, handlers, decision): every
command it would run, through wrappers like ``sudo``/``env``/``xargs``/``find
-exec``, shell strings like ``bash -c``, quoting and paths) and checked:

1. **deny first**: if a ``bash`` rule denies any command by any of its
   spellings (``rm`` in ``sudo /bin/rm x``, ``bash -c 'rm x'``...), the call fails
   with ``permission_denied`` naming the rule, before anyone is asked; so does a
   command only known at run time (``$cmd``, ``eval``, ``... | sh``) when the
   catch-all rule ``*`` denies;
2. one ``external_directory`` ask for every directory outside the project that
   the line names: path arguments of cd, rm, cp, mv, mkdir, touch, chmod, chown
   and cat (of the program a wrapper runs too), files that redirections open,
   and ``workdir`` itself. ``~``, ``$HOME``-style variables, ``..`` and symlinks are
   resolved, and a path that does not exist yet counts where its nearest
   existing ancestor is;
3. one ``bash`` ask whose patterns are the text of every command in the line
   (``cd`` alone is not asked for) and whose "always" patterns are arity prefixes
   (``git checkout *``; ``sudo *`` and ``rm *`` for ``sudo rm x``). A command only
   known at run time is asked for (without "always") whenever the rules restrict
   bash at all, even if they would allow its text.

A line tree-sitter cannot parse is never run on a guess: it counts as unknown,
its ``bash`` ask has the whole line as its first pattern (then any command the
parser still recovered) and offers no "always"; a rule that denies the whole text
or a recovered command still denies it; under the default rules (everything
allowed) it runs and bash reports the syntax error.

The command then runs in the kernel sandbox (tools/bash/sandbox/: Landlock, namespaces,
bubblewrap where Landlock is missing), started by the sandbox supervisor, which ends its
whole process tree on a timeout or a cancellation; jobs it left in the background keep
running until the sidecar exits. ``metadata.sandbox`` says what held it. A write the
sandbox stopped is named in a note, and a person may allow that folder: the command then
runs once more with it writable.

Differences from OpenCode, on purpose: rules are checked against what the line
runs, not only its text (wrappers, nested shells, ``/bin/rm``, ``\\rm``), and a
command only known at run time cannot be allowed by an allow rule; arguments are
unquoted before their paths are checked (``rm "../x y"`` is the file ``../x y``),
paths that do not exist yet and redirection targets are checked too; a line with
syntax errors is asked for whole; the timeout/abort note uses the newer wording
under 1.18.33's tag ``<shell_metadata>``; a timeout is not an error (the model
reads the note; ``metadata.timedOut`` tells the editor).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from tools.arguments.model import Arguments
from tools.bash import process
from tools.bash.commands import Analysis, Effective, unique
from tools.bash.decision import Decision, Denial, decide
from tools.bash.effects import Effects, effects
from tools.bash.sandbox import client as sandbox_client
from tools.bash.sandbox import denials as sandbox_denials
from tools.bash.sandbox import settings as sandbox_settings
from tools.bash.sandbox.plan import Plan, holds_writes
from tools.bash.sandbox.plan import decide as decide_plan
from tools.bash.sandbox.probe import Support
from tools.bash.walker import analyse_line
from tools.context import ToolContext
from tools.errors import NotFoundError, PermissionDeniedError, PermissionRejectedError, ToolError
from tools.fsio.paths import is_inside, locations, real, relative, resolve
from tools.permission.rules import Rule, wildcard_match
from tools.result import ToolResult
from tools.tool import Annotations, define
from tools.truncation import truncate_tail

log = logging.getLogger("toolhost.bash")

DEFAULT_TIMEOUT_MS = 120_000
TIMEOUT_GRACE_MS = 100  # the kill fires this long after the timeout (OpenCode's)
MAX_METADATA_LENGTH = 30_000
ASK_TITLE_CHARS = 80  # of the command, in a permission prompt's title

# Devices every command line may read or write (2>/dev/null) without an ask.
HARMLESS_DEVICES = frozenset(
    f"/dev/{name}" for name in ("null", "zero", "full", "random", "urandom", "tty")
) | frozenset(f"/dev/std{name}" for name in ("in", "out", "err"))

SHELLS = frozenset({"bash", "zsh", "sh", "dash"})  # fish, nu & co. don't speak POSIX sh

# Added to the inherited environment: nothing may wait for a terminal, since stdin
# is /dev/null and nobody is there to answer.
#   PAGER, GIT_PAGER, MANPAGER=cat  git log, man, systemctl... print instead of paging
#   GIT_TERMINAL_PROMPT=0           git fails instead of prompting for credentials
#   GIT_EDITOR=true                 commit/merge/rebase keep the prepared message
#                                   instead of opening an editor that would hang
#   TERM=dumb (only if unset)       programs that look at TERM assume no cursor control
# NO_COLOR is not set: output is a pipe, so most programs print no colour already,
# and forcing it would change the output of those that ask for colour on purpose.
NONINTERACTIVE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
}


@dataclass(frozen=True, kw_only=True)
class BashParams(Arguments):
    # Not NaN or infinity.
    __pydantic_config__: ClassVar[dict[str, Any]] = {
        **Arguments.__pydantic_config__,
        "allow_inf_nan": False,
    }
    command: str
    """The command line to run"""
    timeout: float | None = None
    """Optional timeout in milliseconds (default 120000)"""
    workdir: str | None = None
    """Directory to run the command in, instead of `cd <dir> &&`; defaults to the project
    directory"""
    description: str | None = None
    """Optional: what the command does, in 5-10 words, e.g. 'Lists files in current directory',
    'Shows working tree status', 'Installs package dependencies'"""


async def execute(args: BashParams, ctx: ToolContext) -> ToolResult:
    if args.timeout is not None and args.timeout < 0:
        raise ToolError(
            f"Invalid timeout value: {_number(args.timeout)}. Timeout must be a positive number.",
            kind="invalid_arguments",
        )
    timeout_ms = DEFAULT_TIMEOUT_MS if args.timeout is None else args.timeout
    workdir = _workdir(args.workdir, ctx)
    analysis = await ctx.run_blocking(analyse_line, args.command, workdir)
    support = await _support()
    strict = not holds_writes(sandbox_settings.mode(ctx.host.config), support)
    approved = await _ask(analysis, workdir, args, ctx, strict=strict)
    plan = _plan(ctx, support, approved)
    finished = await _run(args, ctx, workdir, plan, support is not None, timeout_ms)
    blocked = sandbox_denials.find(finished.output, plan, workdir)
    offered = _directories_to_offer(blocked, plan)
    if offered and not finished.timed_out and await _allow_writing(offered, args, ctx):
        plan = _plan(ctx, support, [*approved, *offered])
        first = finished
        finished = await _run(args, ctx, workdir, plan, True, timeout_ms)
        blocked = sandbox_denials.find(finished.output, plan, workdir)
        notes = [_rerun_note(offered, first)]
    else:
        notes = []
    notes += sandbox_denials.notes(
        blocked, sandbox_denials.network_refused(finished.output, plan), plan
    )
    tail = _notes(timeout_ms=timeout_ms if finished.timed_out else None, sandbox=notes)
    # The tail is kept, after OpenCode 1.18.33's marker: a command's end holds its verdict.
    limits = ctx.host.config.tool_output
    cut = truncate_tail(finished.output, max_lines=limits.max_lines, max_bytes=limits.max_bytes)
    output = (cut.text or "(no output)") + tail
    metadata: dict[str, Any] = {
        "output": _cap((finished.output or "(no output)") + tail),  # what the editor shows
        "exit": finished.exit,
        "description": args.description,
        "sandbox": plan.summary(),
        "truncated": cut.truncated,
    }
    if cut.output_path:
        metadata["outputPath"] = cut.output_path
    if blocked:
        metadata["sandbox"]["blocked"] = [{"path": b.path, "kind": b.kind} for b in blocked]
    if finished.timed_out:
        metadata["timedOut"] = True
    # 1.18.33 has no description, and its title is the command.
    return ToolResult(title=args.description or args.command, output=output, metadata=metadata)


async def _run(
    args: BashParams,
    ctx: ToolContext,
    workdir: Path,
    plan: Plan,
    supervised: bool,
    timeout_ms: float,
) -> process.Finished:
    """Run the command once under ``plan``, streaming its output to the editor."""
    if plan.refused:
        raise ToolError(
            "The sandbox is required for commands (sandbox.mode: required) and cannot be "
            f"enforced here: {plan.refused}. Nothing was run. Do the task without running "
            "commands, or ask the user: `toolhost doctor` shows what is missing, and "
            "sandbox.mode: auto runs commands unsandboxed where it is.",
            kind="permission_denied",
            metadata={"sandbox": plan.summary()},
        )
    preview = _Preview()
    title = args.description or args.command  # 1.18.33 has no description: the command

    def on_output(text: str) -> None:
        preview.add(text)
        ctx.metadata(title, {"output": preview.text(), "description": args.description})

    ctx.metadata(title, {"output": "", "description": args.description})
    try:
        return await process.run(
            shell_argv(args.command),
            cwd=workdir,
            env=shell_env(),
            timeout=(timeout_ms + TIMEOUT_GRACE_MS) / 1000,
            on_output=on_output,
            plan=plan if supervised else None,
        )
    except asyncio.CancelledError:
        _final_update(ctx, title, args.description, preview.text() + _notes(aborted=True))
        raise
    except OSError as error:
        raise ToolError(
            f"Could not start the shell ({error}). Check that workdir exists and is a "
            "directory, then retry.",
        ) from error


async def _support() -> Support | None:
    """What the sandbox can enforce here (starting its supervisor on first use)."""
    try:
        return (await sandbox_client.running()).support
    except (sandbox_client.SupervisorError, OSError):
        log.warning("the sandbox supervisor could not start", exc_info=True)
        return None


def _plan(ctx: ToolContext, support: Support | None, extra: list[str]) -> Plan:
    policy = sandbox_settings.policy(
        ctx.host.config,
        worktree=ctx.worktree,
        directory=ctx.directory,
        rules=_sandbox_rules(ctx),
        extra_writable=extra,
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


def _directories_to_offer(blocked: list[sandbox_denials.Blocked], plan: Plan) -> list[str]:
    found: list[str] = []
    for item in blocked:
        if item.kind != "outside":
            continue
        directory = sandbox_denials.directory_to_allow(item.path)
        if directory is not None and directory not in found and directory not in plan.writable:
            found.append(directory)
    return found


async def _allow_writing(directories: list[str], args: BashParams, ctx: ToolContext) -> bool:
    """One ask: may the command run again with these directories writable? Asked even
    where the rules allow (running it again is the person's call); a deny rule wins."""
    globs = [f"{d.rstrip('/')}/*" for d in directories]
    shown = ", ".join(directories)
    try:
        await ctx.ask(
            "external_directory",
            globs,
            globs,
            {
                "command": args.command,
                "directories": directories,
                "sandbox": "write",
                "rerun": True,
            },
            title=f"Allow writing to {shown} for this command? It will run again",
            force=True,
        )
    except (PermissionRejectedError, PermissionDeniedError):
        return False
    return True


def _rerun_note(directories: list[str], first: process.Finished) -> str:
    shown = ", ".join(directories)
    return (
        f"The sandbox stopped a write to {shown} on the first run (exit "
        f"{first.exit}); the user allowed writing there, so the command ran a second time, "
        "and the output above is the second run's. Anything the first run did inside the "
        "project was done twice."
    )


def _final_update(ctx: ToolContext, title: str, description: str | None, output: str) -> None:
    """Tell the editor why the command stopped; the cancelled call has no result to.

    Sent at once: ``ctx.metadata`` would hold it back for its 100 ms rate limit, and
    the shell drops held updates when the call ends. (``ctx.finish()`` first drops
    any older update still held, so this one is the last.)
    """
    ctx.finish()
    ctx.editor.notify_update(
        {
            "sessionID": ctx.session_id,
            "callID": ctx.call_id,
            "title": title,
            "metadata": {"output": _cap(output), "description": description},
        }
    )


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _workdir(given: str | None, ctx: ToolContext) -> Path:
    if given is None:
        return ctx.directory
    path = resolve(given, ctx.directory)
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise NotFoundError(
            f"The workdir {path} {what}. Pass an existing directory as workdir, or leave it "
            "out to run in the project directory."
        )
    return path


# ---------------------------------------------------------------- permissions


async def _ask(
    analysis: Analysis, workdir: Path, args: BashParams, ctx: ToolContext, *, strict: bool
) -> list[str]:
    """Ask what the rules say to; return the outside directories this call may write to
    (the ones it names as write targets, now allowed).

    ``strict``: the kernel does not hold the command's writes, so a path only known
    when it runs makes the command unknown.
    """
    found = await ctx.run_blocking(_effects, analysis, workdir, strict)
    for text, why in found.unknown:
        analysis.commands.append(Effective(text=text, unknown=[why]))
    _decide(analysis, ctx)
    roots = (real(ctx.directory), real(ctx.worktree))
    outside, written = await ctx.run_blocking(_outside_dirs, found, workdir, roots)
    if outside:
        globs = [f"{d.as_posix().rstrip('/')}/*" for d in outside]
        await ctx.ask(
            "external_directory",
            globs,
            globs,
            {
                "command": args.command,
                "workdir": str(workdir),
                "directories": [str(d) for d in outside],
            },
            title=f"Access files outside the project: {', '.join(globs)}",
        )
    # Again: the rules may have changed while the user answered.
    decision = _decide(analysis, ctx)
    metadata: dict[str, Any] = {
        "command": args.command,
        "workdir": str(workdir),
        "description": args.description,
    }
    if analysis.parse_error:
        metadata["parseError"] = True
    if decision.unknown:
        metadata["unknown"] = decision.unknown
    title = _ask_title(args.command, workdir, ctx)
    if decision.needs_ask:
        await ctx.ask("bash", decision.patterns, decision.always, metadata, title=title)
    elif decision.force:
        await _ask_regardless(ctx, decision.patterns, metadata, title)
    return [str(d) for d in written]


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


# ---------------------------------------------------------------- running


def pick_shell() -> str:
    """$SHELL when it is a POSIX-style shell, else bash, else sh."""
    preferred = os.environ.get("SHELL", "")
    if os.path.basename(preferred) in SHELLS and os.access(preferred, os.X_OK):
        return preferred
    for candidate in ("/bin/bash", "/bin/sh"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


def shell_argv(command: str, shell: str | None = None) -> list[str]:
    """Run ``command`` without the user's startup files (they may prompt or print)."""
    shell = shell or pick_shell()
    name = os.path.basename(shell)
    if name == "bash":
        return [shell, "--noprofile", "--norc", "-c", command]
    if name == "zsh":
        return [shell, "-f", "-c", command]
    return [shell, "-c", command]


def shell_env() -> dict[str, str]:
    env = {**os.environ, **NONINTERACTIVE_ENV}
    env.setdefault("TERM", "dumb")
    return env


# ---------------------------------------------------------------- output


class _Preview:
    """The output so far for progress updates: its last 30 000 characters (1.18.33)."""

    def __init__(self) -> None:
        self.tail = ""
        self.cut = False

    def add(self, text: str) -> None:
        self.tail += text
        if len(self.tail) > 2 * MAX_METADATA_LENGTH:  # trim now and then, not per chunk
            self.tail = self.tail[-MAX_METADATA_LENGTH:]
            self.cut = True

    def text(self) -> str:
        return "...\n\n" + self.tail[-MAX_METADATA_LENGTH:] if self.cut else _cap(self.tail)


def _cap(text: str) -> str:
    if len(text) <= MAX_METADATA_LENGTH:
        return text
    return "...\n\n" + text[-MAX_METADATA_LENGTH:]


def _notes(
    *, timeout_ms: float | None = None, aborted: bool = False, sandbox: Sequence[str] = ()
) -> str:
    notes = [*sandbox]
    if timeout_ms is not None:
        notes.append(
            f"shell tool terminated command after exceeding timeout {_number(timeout_ms)} ms. "
            "If this command is expected to take longer and is not waiting for interactive "
            "input, retry with a larger timeout value in milliseconds."
        )
    if aborted:
        notes.append("User aborted the command")
    if not notes:
        return ""
    return "\n\n<shell_metadata>\n" + "\n".join(notes) + "\n</shell_metadata>"


tool = define(
    "bash",
    parameters=BashParams,
    execute=execute,
    kind="execute",
    annotations=Annotations(destructive=True, open_world=True),
)
