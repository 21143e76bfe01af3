"""``bash``: run a command line in a shell (reference §3.5, §6.6).

Before anything runs, the line is analysed (tools/bash/: walker, programs, decision): every
command it would run, through wrappers like ``sudo``/``env``/``xargs``/``find
-exec``, shell strings like ``bash -c``, quoting and paths) and checked (the asks are
tools/bash/asks.py):

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
bubblewrap where Landlock is missing; the call's plan is tools/bash/sandboxing.py), in
the shell tools/bash/shell.py picks, started by the sandbox supervisor, which ends its
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tools.arguments.model import Arguments
from tools.bash import process, rerun
from tools.bash.asks import allow_repositories, allow_writing, ask_to_run
from tools.bash.sandbox import denials as sandbox_denials
from tools.bash.sandbox import settings as sandbox_settings
from tools.bash.sandbox.plan import Plan, holds_writes
from tools.bash.sandboxing import (
    capture_roots,
    directories_to_offer,
    egress,
    guard_outcome,
    network_gate,
    network_notes,
    network_off_why,
    plan_for,
    refused_repositories,
    rejected_note,
    rerun_note,
    support_here,
)
from tools.bash.shell import shell_argv, shell_env
from tools.bash.walker import analyse_line
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio.paths import relative, resolve
from tools.network.gate import Gate
from tools.result import ToolResult
from tools.tool import Annotations, define
from tools.truncation import truncate_tail

DEFAULT_TIMEOUT_MS = 120_000
TIMEOUT_GRACE_MS = 100  # the kill fires this long after the timeout (OpenCode's)
MAX_METADATA_LENGTH = 30_000


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
    support = await support_here()
    strict = not holds_writes(sandbox_settings.mode(ctx.host.config), support)
    approved = await ask_to_run(
        analysis, workdir, args.command, args.description, ctx, strict=strict
    )
    plan = plan_for(ctx, support, approved)
    gate = network_gate(ctx, plan, args.command)
    finished = await _run(args, ctx, workdir, plan, support is not None, timeout_ms, gate)
    blocked = sandbox_denials.find(finished.output, plan, workdir, finished.refused)
    offered = directories_to_offer(blocked, plan)
    notes: list[str] = []
    if offered and not finished.timed_out:
        earlier = await ctx.run_blocking(rerun.first_run, plan, finished)
        said = earlier.described(ctx.worktree)
        if await allow_writing(offered, args.command, ctx, said, earlier.changes):
            # Nothing runs twice: the first run's changes go back before the second run.
            restored, skipped = await ctx.run_blocking(rerun.put_back, earlier)
            plan = plan_for(ctx, support, [*approved, *offered])
            first = finished
            finished = await _run(args, ctx, workdir, plan, True, timeout_ms, gate)
            blocked = sandbox_denials.find(finished.output, plan, workdir, finished.refused)
            notes.append(rerun_note(offered, first, earlier, restored, skipped))
        else:
            ctx.editor.show_message(rejected_note(offered, earlier, ctx.worktree, to_person=True))
            notes.append(rejected_note(offered, earlier, ctx.worktree))
    elif (folders := refused_repositories(finished)) and not finished.timed_out:
        earlier = await ctx.run_blocking(rerun.first_run, plan, finished)
        said = earlier.described(ctx.worktree)
        shown = [relative(Path(f), ctx.worktree) for f in folders]
        answer = await allow_repositories(folders, args.command, ctx, said, earlier.changes)
        if answer:
            restored, skipped = await ctx.run_blocking(rerun.put_back, earlier)
            plan = plan_for(ctx, support, approved, repos=folders)
            first = finished
            finished = await _run(args, ctx, workdir, plan, True, timeout_ms, gate)
            blocked = sandbox_denials.find(finished.output, plan, workdir, finished.refused)
            notes.append(rerun_note(shown, first, earlier, restored, skipped, repository=True))
        elif answer is False:
            notes.append(f"The user did not allow making a git repository in {', '.join(shown)}.")
    refused = gate is None and sandbox_denials.network_refused(finished.output, plan)
    notes += sandbox_denials.notes(blocked, refused, plan)
    notes += guard_outcome(plan, finished, ctx.worktree)
    why = network_off_why(ctx, plan) if refused else None
    if why:
        notes.append(why)
    if gate is not None:
        notes += network_notes(gate, finished.output, plan)
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
    if gate is not None:
        metadata["sandbox"]["network"] = gate.report()
    if cut.output_path:
        metadata["outputPath"] = cut.output_path
    if finished.refused:
        metadata["sandbox"]["refused"] = list(finished.refused)
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
    gate: Gate | None = None,
) -> process.Finished:
    """Run the command once under ``plan``, streaming its output to the editor; ``gate``
    decides its network through the proxy (the domain lists)."""
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
    if ctx.turn is not None and plan.engine != "none":  # keep what it changes (undo)
        plan.capture = await ctx.run_blocking(ctx.turn.capture_spec, capture_roots(ctx, plan))
    try:
        return await process.run(
            shell_argv(args.command),
            cwd=workdir,
            env=shell_env(),
            timeout=(timeout_ms + TIMEOUT_GRACE_MS) / 1000,
            on_output=on_output,
            plan=plan if supervised else None,
            egress=egress(gate),
        )
    except asyncio.CancelledError:
        _final_update(ctx, title, args.description, preview.text() + _notes(aborted=True))
        raise
    except OSError as error:
        raise ToolError(
            f"Could not start the shell ({error}). Check that workdir exists and is a "
            "directory, then retry.",
        ) from error


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
    # float(): the default timeout is an int, and 3.11's int has no is_integer().
    return str(int(value)) if float(value).is_integer() else str(value)


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
