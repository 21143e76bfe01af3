"""``bash``: run a command line in a shell (reference §3.5, §6.6).

Before anything runs, the line is parsed (tools/shell_parse.py) and permission
is asked for what it would do:

1. one ``external_directory`` ask for every directory outside the project that
   the line names: existing path arguments of cd, rm, cp, mv, mkdir, touch, chmod,
   chown and cat, and ``workdir`` itself;
2. one ``bash`` ask whose patterns are the text of every command in the line
   (``cd`` alone is not asked for) and whose "always" patterns are their arity
   prefixes (``git checkout *``).

A line tree-sitter cannot parse is never run on a guess: its ``bash`` ask has the
whole line as its first pattern (then any command the parser still recovered) and
offers no "always". The ask goes through the rules like any other, so a rule
that denies the whole text or a recovered command still denies it; under the
default rules (everything allowed) it runs and bash reports the syntax error.

Running, timeouts and cancellation are tools/process.py's: the whole process tree
ends (group, descendants, and double-forked escapees found by an environment
marker), and jobs left in the background by a command that exited keep running.

Differences from OpenCode, on purpose: arguments are unquoted before their paths
are checked (``rm "../x y"`` is the file ``../x y``), and the command name is
matched by its basename (``/bin/rm``); a line with syntax errors is asked for whole;
the timeout/abort note uses the newer wording under our tool's tag
``<bash_metadata>``; a timeout is not an error (the model reads the note;
``metadata.timedOut`` tells the editor).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tools import process
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.paths import is_inside, real, resolve
from tools.result import ToolResult
from tools.shell_parse import CommandLine, ParsedCommand, analyse
from tools.tool import Annotations, define

DEFAULT_TIMEOUT_MS = 120_000
TIMEOUT_GRACE_MS = 100  # the kill fires this long after the timeout (OpenCode's)
MAX_METADATA_LENGTH = 30_000

# Commands whose arguments are paths worth checking (OpenCode's list plus cat).
PATH_COMMANDS = frozenset({"cd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat"})

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


class BashParams(BaseModel):
    command: str = Field(description="The command line to run")
    timeout: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description=f"Optional timeout in milliseconds (default {DEFAULT_TIMEOUT_MS})",
    )
    workdir: str | None = Field(
        default=None,
        description="Directory to run the command in, instead of `cd <dir> &&`; "
        "defaults to the project directory",
    )
    description: str = Field(
        description="What the command does, in 5-10 words, e.g. 'Lists files in current "
        "directory', 'Shows working tree status', 'Installs package dependencies'"
    )


async def execute(args: BashParams, ctx: ToolContext) -> ToolResult:
    if args.timeout is not None and args.timeout < 0:
        raise ToolError(
            f"Invalid timeout value: {_number(args.timeout)}. Timeout must be a positive number.",
            kind="invalid_arguments",
        )
    timeout_ms = DEFAULT_TIMEOUT_MS if args.timeout is None else args.timeout
    workdir = _workdir(args.workdir, ctx)
    line = analyse(args.command)
    await _ask(line, workdir, args, ctx)

    preview = _Preview()

    def on_output(text: str) -> None:
        preview.add(text)
        ctx.metadata(args.description, {"output": preview.text(), "description": args.description})

    ctx.metadata(args.description, {"output": "", "description": args.description})
    try:
        finished = await process.run(
            shell_argv(args.command),
            cwd=workdir,
            env=shell_env(),
            timeout=(timeout_ms + TIMEOUT_GRACE_MS) / 1000,
            on_output=on_output,
        )
    except asyncio.CancelledError:
        _final_update(ctx, args.description, preview.head + _notes(aborted=True))
        raise
    except OSError as error:
        raise ToolError(
            f"Could not start the shell ({error}). Check that workdir exists and is a "
            "directory, then retry.",
        ) from error

    output = (finished.output or "(no output)") + _notes(
        timeout_ms=timeout_ms if finished.timed_out else None
    )
    metadata: dict[str, Any] = {
        "output": _cap(output),
        "exit": finished.exit,
        "description": args.description,
    }
    if finished.timed_out:
        metadata["timedOut"] = True
    return ToolResult(title=args.description, output=output, metadata=metadata)


def _final_update(ctx: ToolContext, description: str, output: str) -> None:
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
            "title": description,
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


async def _ask(line: CommandLine, workdir: Path, args: BashParams, ctx: ToolContext) -> None:
    commands = [c for c in line.commands if c.tokens]
    roots = (real(ctx.directory), real(ctx.worktree))
    outside = await ctx.run_blocking(_outside_dirs, commands, workdir, roots)
    if outside:
        globs = [f"{d.as_posix().rstrip('/')}/*" for d in outside]
        await ctx.ask(
            "external_directory",
            globs,
            globs,
            {"command": args.command, "directories": [str(d) for d in outside]},
        )
    metadata = {"command": args.command, "description": args.description}
    if line.parse_error:
        patterns = _unique([args.command, *(c.text for c in commands)])
        await ctx.ask("bash", patterns, [], {**metadata, "parseError": True})
        return
    asked = [c for c in commands if c.name != "cd"]
    if asked:
        await ctx.ask(
            "bash",
            _unique(c.text for c in asked),
            _unique(c.always for c in asked),
            metadata,
        )


def _outside_dirs(
    commands: list[ParsedCommand], workdir: Path, roots: tuple[Path, ...]
) -> list[Path]:
    """Directories outside ``roots`` that the line touches, in order, each once."""
    found: list[Path] = []

    def note(path: Path, is_dir: bool) -> None:
        if any(is_inside(path, root) for root in roots):
            return
        directory = path if is_dir else path.parent
        if directory not in found:
            found.append(directory)

    note(real(workdir), True)
    for command in commands:
        name = os.path.basename(command.name or "")
        if name not in PATH_COMMANDS:
            continue
        for word in command.words[1:]:
            if not word or word.startswith("-") or (name == "chmod" and word.startswith("+")):
                continue  # None: known only at run time (a known gap, as in OpenCode)
            path = real(resolve(word, workdir))
            if path.exists():
                note(path, path.is_dir())
    return found


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))


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
    """The output so far for progress updates: its first 30 000 characters."""

    def __init__(self) -> None:
        self.head = ""

    def add(self, text: str) -> None:
        if len(self.head) <= MAX_METADATA_LENGTH:  # past that only the cap is shown
            self.head += text

    def text(self) -> str:
        return _cap(self.head)


def _cap(text: str) -> str:
    if len(text) <= MAX_METADATA_LENGTH:
        return text
    return text[:MAX_METADATA_LENGTH] + "\n\n..."


def _notes(*, timeout_ms: float | None = None, aborted: bool = False) -> str:
    notes = []
    if timeout_ms is not None:
        notes.append(
            f"bash tool terminated command after exceeding timeout {_number(timeout_ms)} ms. "
            "If this command is expected to take longer and is not waiting for interactive "
            "input, retry with a larger timeout value in milliseconds."
        )
    if aborted:
        notes.append("User aborted the command")
    if not notes:
        return ""
    return "\n\n<bash_metadata>\n" + "\n".join(notes) + "\n</bash_metadata>"


tool = define(
    "bash",
    parameters=BashParams,
    execute=execute,
    kind="execute",
    annotations=Annotations(destructive=True, open_world=True),
)
