"""Following a bash line to every program it will run.

``tools.bash.shell_parse`` lists every simple command in a line. Matching the rules
against those texts alone, as OpenCode does, lets a denied ``rm`` through by many
routes: ``sudo rm``, ``env rm``, ``/bin/rm``, ``\\rm``, ``bash -c 'rm x'``,
``find . -exec rm {} \\;``, ``echo x | xargs rm``... The walker follows each
command through them:

- **wrappers**, programs whose arguments name another program to run: their
  handler (``tools.bash.programs``) skips their options and returns the program
  they start, which becomes the next **stage** of the command:
  ``sudo -u root env FOO=1 rm -rf x`` runs sudo, then env, then rm;
- **shell code in a string** (``bash -c``, ``watch``, ``trap``, ``su -c``, ``alias``
  values, ``env -S``, ``find -exec``...) and variables that programs run as commands
  (``PAGER``, ``GIT_SSH_COMMAND``, ``PS4``...): the string is parsed like a line of
  its own, up to ``MAX_DEPTH`` levels deep, and its commands are checked like the
  others;
- **spelling**: quotes and escapes are removed (``\\rm``, ``'rm'``, ``r''m``), line
  continuations joined, assignments in front skipped (``FOO=1 rm``), and a program
  named by a path is also matched by its file name (``/bin/rm``, ``./rm``).

A command whose program is only known when it runs is **unknown** (not literal):
a name from an expansion (``$cmd``, ``$(echo rm)``, backticks, ``$'rm'``, globs
and braces like ``/bin/r?``), ``eval``, ``source``/``.``, a shell that reads its
commands from input or a script file (``... | sh``, ``bash script.sh``, ``sh <<EOF``),
a ``-c`` string that is not literal or does not parse, ``find -exec {}``, a program
that ``xargs`` takes from its input, an unknown option or an expansion among a
wrapper's options, and variables naming a script to load (``BASH_ENV``,
``LD_PRELOAD``). A line that does not parse is unknown as a whole.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tools.bash.commands import Analysis, Effective, Stage, State, guess_programs
from tools.bash.constructs import special_variable
from tools.bash.programs import HANDLERS
from tools.bash.shell_parse import Arg, CommandLine, ParsedCommand, analyse

MAX_DEPTH = 8  # nested shell strings followed; deeper is unknown

# Variables whose value a program runs as a shell command (git log with PAGER set,
# bash -x printing PS4...), or as a program.
COMMAND_VARIABLES = frozenset(
    {
        "PAGER",
        "GIT_PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_SSH_COMMAND",
        "GIT_SSH",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GIT_EXTERNAL_DIFF",
        "PS4",
        "PS0",
        "PS1",
        "PS2",
        "PROMPT_COMMAND",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
    }
)
# Variables naming a file of code that shells or the loader run first.
SCRIPT_VARIABLES = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT"})


def analyse_line(text: str, cwd: Path | None = None) -> Analysis:
    """Every command ``text`` would run, through wrappers and nested shell code.

    ``cwd`` (the working directory) lets a program named by a path that is a
    symlink be matched by its target's name too (``./x`` -> ``/bin/rm``).
    """
    line = analyse(text)
    analysis = Analysis(text=text, parse_error=line.parse_error)
    if line.parse_error:
        whole = Effective(text=text, unknown=["the line could not be parsed"])
        analysis.commands.append(whole)
    Walker(analysis, cwd).line(line, depth=0)
    return analysis


class Walker:
    def __init__(self, analysis: Analysis, cwd: Path | None) -> None:
        self.analysis = analysis
        self.cwd = cwd

    def line(self, line: CommandLine, depth: int) -> None:
        self.analysis.redirects.extend(line.redirects)
        self.analysis.written.extend(line.written)
        for text, reason in line.constructs:
            self.analysis.commands.append(Effective(text=text, unknown=[reason]))
        for command in line.commands:
            self.command(command, depth)
        for name, value in line.assignments:
            self.assignment(name, value, f"{name}={value.raw}", State(depth))
            known = self.analysis.variables
            literal = value.known
            known[name] = literal if known.get(name, literal) == literal else None

    def command(self, parsed: ParsedCommand, depth: int) -> None:
        effective = Effective(text=parsed.text, always=parsed.always)
        self.analysis.commands.append(effective)
        self.unwrap(list(parsed.argv), effective, State(depth))
        guess_programs(effective, parsed.argv)

    def unwrap(self, args: list[Arg], effective: Effective, state: State) -> None:
        """Follow wrappers: each one's handler returns the words of the next program."""
        while args:
            head = args[0]
            name = self.known(head, state)
            if name is None:
                effective.unknown.append(f"the program `{head.raw}` is only known when it runs")
                return
            stage = Stage(tuple(args))
            effective.stages.append(stage)
            self.link_target(name, effective)
            handler = HANDLERS.get(stage.name)
            if handler is None:
                return
            args, state = handler(self, args, effective, state)

    def nested(self, code: str, effective: Effective, state: State, what: str) -> None:
        """Shell code a program will run: its commands are checked like the line's."""
        if state.depth + 1 > MAX_DEPTH:
            effective.unknown.append(f"{what} is nested more than {MAX_DEPTH} levels deep")
            return
        line = analyse(code)
        if line.parse_error:
            effective.unknown.append(f"{what} could not be parsed")
        self.line(line, state.depth + 1)

    def assignment(self, name: str, value: Arg, text: str, state: State) -> None:
        special = special_variable(name)
        if special and name not in SCRIPT_VARIABLES and not name.startswith("BASH_FUNC_"):
            self.analysis.commands.append(Effective(text=text, unknown=[special]))
        if name in SCRIPT_VARIABLES:
            unknown = f"`{name}` names a file of code that runs first"
            self.analysis.commands.append(Effective(text=text, unknown=[unknown]))
        elif name in COMMAND_VARIABLES or (name.startswith("BASH_FUNC_") and name.endswith("%%")):
            holder = Effective(text=text)
            code = value.value
            if code is None:
                holder.unknown.append(f"the command in `{name}` is only known when it runs")
            elif name.startswith("BASH_FUNC_"):  # an exported function: "() { body; }"
                self.nested(code.removeprefix("()"), holder, state, f"the function in `{name}`")
            else:
                self.nested(code, holder, state, f"the command in `{name}`")
            if holder.unknown:
                self.analysis.commands.append(holder)

    def known(self, arg: Arg, state: State) -> str | None:
        """The word's value, when it is literal and no placeholder fills it at run time."""
        value = arg.known
        if value is None or any(hole in value for hole in state.holes):
            return None
        return value

    def option(self, arg: Arg, state: State, effective: Effective) -> str | None:
        """A word where an option may stand: its value, or None (and the command is
        unknown) when an expansion could turn it into an option. A word that cannot
        be an option is returned as it is: the caller sees an operand."""
        value = arg.value
        if value is None or (value.startswith("-") and self.known(arg, state) is None):
            program = effective.stages[-1].args[0].raw if effective.stages else "the program"
            effective.unknown.append(f"`{program}` gets an option only known when it runs")
            return None
        return value

    def link_target(self, program: str, effective: Effective) -> None:
        """A program that is a symlink is also its target: ``./x`` or a ``del`` on PATH
        linking to ``/bin/rm`` is ``rm`` too (links made by the line itself are not
        there yet: a known limit)."""
        if self.cwd is None:
            return
        if "/" in program:
            found: str | None = str(self.cwd / os.path.expanduser(program))
        else:
            found = shutil.which(program)
        if found is None:
            return
        target = os.path.basename(os.path.realpath(found))
        if target and target != os.path.basename(program):
            effective.names.append(target)
