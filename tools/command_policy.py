"""What a bash line really runs, and what the bash rules say about it.

tools/shell_parse.py lists every simple command in a line. Matching the rules
against those texts alone, as OpenCode does, lets a denied ``rm`` through by many
routes: ``sudo rm``, ``env rm``, ``/bin/rm``, ``\\rm``, ``bash -c 'rm x'``,
``find . -exec rm {} \\;``, ``echo x | xargs rm``... This module follows each
command through them:

- **wrappers**, programs whose arguments name another program to run (``sudo``,
  ``env``, ``command``, ``builtin``, ``exec``, ``nohup``, ``nice``, ``ionice``,
  ``timeout``, ``stdbuf``, ``time``, ``xargs``, ``watch -x``, ``doas``, ``setsid``,
  ``busybox``, ...): their options are skipped (with the options that take a
  value) and the program they start becomes the next **stage** of the command:
  ``sudo -u root env FOO=1 rm -rf x`` runs sudo, then env, then rm;
- **shell code in a string**: ``bash -c``/``sh -c``/``zsh -c``... (also ``-lc``,
  ``-ec``), ``watch``, ``trap``, ``su -c``, ``flock -c``, ``alias`` values, ``env -S``,
  ``find -exec`` and variables that programs run as commands (``PAGER``,
  ``GIT_SSH_COMMAND``, ``PS4``...): the string is parsed like a line of its own,
  up to ``MAX_DEPTH`` levels deep, and its commands are checked like the others;
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

How the rules apply (``decide``), for the ``bash`` permission:

1. **Denied** when any rule denies any candidate of any command: its source text,
   each stage as it is spelled (``env FOO=1 rm -rf x``, ``rm -rf x``), each stage
   with its program's file name (``/bin/rm x`` -> ``rm x``), and each program's
   file name alone (``rm``).
2. **Unknown commands** could be anything: they are denied when the catch-all
   ``evaluate("bash", "*")`` is deny (the config denies what it does not name);
   they run without asking only when no bash rule can deny or ask anything (the
   last catch-all rule and every bash rule after it allow, as under the defaults);
   otherwise they are asked for, with no "always" (see ``unrestricted``).
3. A known command runs without asking when its source text and every stage as
   spelled are allowed (so an allowed ``git`` does not allow ``sudo git`` or
   ``./git``, and ``FOO=1 git`` needs its own rule, as in OpenCode). Otherwise one
   ``bash`` ask lists every command's text, and its "always" patterns are the arity
   prefixes of the source tokens and of every stage (``sudo *``, ``rm *``), so an
   "always" approval covers the whole chain next time.

Known limits (a deny rule names commands, not effects): interpreters run code
of their own (``python -c``, ``perl -e``, ``awk 'BEGIN{system(...)}'``,
``node -e``), as do programs configured to run commands (git aliases and
``-c core.pager=``, make, npm scripts, ``npx``), and a binary copied or linked
under another name in the same line (``cp /bin/rm x && ./x``) is that name.
An allow rule allows all that such a program can do.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tools.arity import prefix
from tools.permission import Rule, evaluate, wildcard_match
from tools.shell_parse import Arg, CommandLine, ParsedCommand, analyse

MAX_DEPTH = 8  # nested shell strings followed; deeper is unknown

SHELLS = frozenset(
    {"sh", "bash", "rbash", "zsh", "dash", "ash", "ksh", "mksh", "pdksh", "yash", "posh"}
    | {"fish", "csh", "tcsh"}
)

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
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
    }
)
# Variables naming a file of code that shells or the loader run first.
SCRIPT_VARIABLES = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT"})


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Stage:
    """One program of a command and the words it is started with."""

    args: tuple[Arg, ...]

    @property
    def name(self) -> str:
        """The program's file name (``/usr/bin/env`` -> ``env``)."""
        return os.path.basename(self.args[0].value or "")

    def words(self) -> list[str]:
        return [a.known if a.known is not None else a.raw for a in self.args]

    @property
    def spelled(self) -> str:
        """The words bash passes, joined by spaces: ``/bin/rm -rf x``."""
        return " ".join(self.words())

    @property
    def by_name(self) -> str:
        """The same with the program's file name: ``rm -rf x``."""
        return " ".join([self.name, *self.words()[1:]])


@dataclass
class Effective:
    """One command of the line, seen through its wrappers."""

    text: str  # its source text: the pattern an ask shows
    always: str = ""  # OpenCode's arity glob of the source tokens ("" without tokens)
    stages: list[Stage] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # why it is not literal
    names: list[str] = field(default_factory=list)  # more program names, checked for deny

    @property
    def is_cd(self) -> bool:
        """A plain ``cd``: never asked for (its path is checked instead)."""
        return len(self.stages) == 1 and self.stages[0].name == "cd" and not self.unknown

    def checks(self) -> list[str]:
        """What must be allowed for the command to run without asking."""
        return _unique([self.text, *(s.spelled for s in self.stages)])

    def deny_checks(self) -> list[str]:
        """What no rule may deny."""
        return _unique(
            [
                *self.checks(),
                *(s.by_name for s in self.stages),
                *(s.name for s in self.stages if s.name),
                *self.names,
            ]
        )

    def always_patterns(self) -> list[str]:
        globs = [" ".join(prefix(s.words())) + " *" for s in self.stages]
        return _unique([self.always, *globs] if self.always else globs)

    @property
    def innermost(self) -> Stage | None:
        return self.stages[-1] if self.stages else None


@dataclass
class Analysis:
    text: str
    parse_error: bool
    commands: list[Effective] = field(default_factory=list)  # outer before nested
    redirects: list[Arg] = field(default_factory=list)  # files redirections open


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
    _Walker(analysis, cwd).line(line, depth=0)
    return analysis


# ---------------------------------------------------------------- the walk


@dataclass(frozen=True)
class _State:
    depth: int
    holes: tuple[str, ...] = ()  # placeholders filled at run time: find's {}, xargs -I's
    appended: bool = False  # xargs adds words from its input after these


# A handler gets a wrapper's words and returns the words of the program it starts
# (none when it starts none) and the state that program runs in.
Result = tuple[list[Arg], _State]
Handler = Callable[["_Walker", list[Arg], Effective, _State], Result]


class _Walker:
    def __init__(self, analysis: Analysis, cwd: Path | None) -> None:
        self.analysis = analysis
        self.cwd = cwd

    def line(self, line: CommandLine, depth: int) -> None:
        self.analysis.redirects.extend(line.redirects)
        for command in line.commands:
            self.command(command, depth)
        for name, value in line.assignments:
            self.assignment(name, value, f"{name}={value.raw}", _State(depth))

    def command(self, parsed: ParsedCommand, depth: int) -> None:
        effective = Effective(text=parsed.text, always=parsed.always)
        self.analysis.commands.append(effective)
        self.unwrap(list(parsed.argv), effective, _State(depth))
        guess_programs(effective, parsed.argv)

    def unwrap(self, args: list[Arg], effective: Effective, state: _State) -> None:
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

    def nested(self, code: str, effective: Effective, state: _State, what: str) -> None:
        """Shell code a program will run: its commands are checked like the line's."""
        if state.depth + 1 > MAX_DEPTH:
            effective.unknown.append(f"{what} is nested more than {MAX_DEPTH} levels deep")
            return
        line = analyse(code)
        if line.parse_error:
            effective.unknown.append(f"{what} could not be parsed")
        self.line(line, state.depth + 1)

    def assignment(self, name: str, value: Arg, text: str, state: _State) -> None:
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

    def known(self, arg: Arg, state: _State) -> str | None:
        """The word's value, when it is literal and no placeholder fills it at run time."""
        value = arg.known
        if value is None or any(hole in value for hole in state.holes):
            return None
        return value

    def option(self, arg: Arg, state: _State, effective: Effective) -> str | None:
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


def guess_programs(effective: Effective, argv: Sequence[Arg]) -> None:
    """An unknown command may run any of its literal words (``$x rm y``, ``timeout $t
    rm y``): each is checked against the rules that name programs."""
    if effective.unknown:
        effective.names += [
            os.path.basename(a.value) for a in argv[1:] if a.value and not a.value.startswith("-")
        ]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class Options:
    """A program's options, as its getopt string would list them."""

    flags: str = ""  # short options without a value
    valued: str = ""  # short options that take a value (attached or next word)
    attached: str = ""  # short options whose value can only be attached (-d[=x])
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    numeric: bool = False  # -5 is an option (nice)


def _words(names: str) -> frozenset[str]:
    return frozenset(names.split())


def parse_options(
    walker: _Walker,
    args: list[Arg],
    spec: Options,
    effective: Effective,
    state: _State,
    start: int = 1,
) -> tuple[int, list[tuple[str, Arg | None]]]:
    """Skip the options at ``args[start:]``; the index of the first operand, and each
    option with its value. Anything not understood makes the command unknown (and is
    skipped as a flag, so the commands after it are still checked)."""
    program = args[0].raw
    found: list[tuple[str, Arg | None]] = []
    i = start
    while i < len(args):
        arg = args[i]
        value = walker.option(arg, state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            return i + 1, found
        if value.startswith("--") and len(value) > 2:
            name, eq, attached = value[2:].partition("=")
            if name in spec.long_valued and not eq:
                found.append((name, args[i + 1] if i + 1 < len(args) else None))
                i += 2
                continue
            known_name = name in spec.long_valued or name in spec.long_flags
            if not known_name and not (spec.numeric and name.isdigit()):
                effective.unknown.append(f"`{program}` has an unknown option `{value}`")
            found.append((name, Arg(attached, attached) if eq else None))
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            return i, found
        i += 1
        for index, letter in enumerate(value[1:], start=1):
            rest = value[index + 1 :]
            if letter in spec.valued:
                if rest:
                    found.append((letter, Arg(rest, rest)))
                else:
                    found.append((letter, args[i] if i < len(args) else None))
                    i += 1
                break
            if letter in spec.attached:
                found.append((letter, Arg(rest, rest) if rest else None))
                break
            if spec.numeric and letter.isdigit():
                break
            if letter not in spec.flags:
                effective.unknown.append(f"`{program}` has an unknown option `-{letter}`")
            found.append((letter, None))
    return i, found


def _rest(args: list[Arg], start: int, effective: Effective, state: _State) -> list[Arg]:
    """The program a wrapper starts; with none given, xargs may supply it."""
    rest = args[start:]
    if not rest and state.appended:
        effective.unknown.append("the program comes from xargs' input")
    return rest


def _operands(
    walker: _Walker, args: list[Arg], start: int, count: int, effective: Effective, state: _State
) -> int:
    """Skip ``count`` fixed operands (timeout's DURATION...); an expansion could shift them."""
    for arg in args[start : start + count]:
        if walker.known(arg, state) is None:
            effective.unknown.append(f"`{args[0].raw}` gets an operand only known when it runs")
    return start + count


def wrapper(spec: Options, operands: int = 0) -> Handler:
    """A program that runs ``[options] [operands] program args...``."""

    def handle(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
        start, _ = parse_options(walker, args, spec, effective, state)
        start = _operands(walker, args, start, operands, effective, state)
        return _rest(args, start, effective, state), state

    return handle


# ---------------------------------------------------------------- handlers

SUDO = Options(
    flags="AbBEeHiKklnPSsVv",
    valued="aCcDghpRrTtUu",
    long_flags=_words(
        "askpass background bell edit help set-home login remove-timestamp reset-timestamp "
        "list non-interactive preserve-groups stdin shell version validate preserve-env"
    ),
    long_valued=_words(
        "auth-type close-from login-class chdir group host prompt chroot role type "
        "command-timeout other-user user"
    ),
)


DOAS = Options(flags="Lns", valued="Cu")
PKEXEC = Options(
    long_flags=_words("disable-internal-agent keep-cwd help version"), long_valued=_words("user")
)


def run_as(spec: Options) -> Handler:
    """sudo, doas, pkexec: ``[options] [program args...]``; -s/-i alone start a shell."""

    def handle(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
        start, found = parse_options(walker, args, spec, effective, state)
        letters = {name for name, _ in found}
        for name, value in found:
            # sudo reads "-h word" as a host only when a command follows; check the
            # word as a program too, whichever way sudo takes it.
            if name == "h" and value is not None and value.known:
                effective.names.append(os.path.basename(value.known))
        rest = _rest(args, start, effective, state)
        if not rest and letters & {"s", "i", "shell", "login"}:
            effective.unknown.append(f"`{args[0].raw}` starts a shell that reads its input")
        return rest, state

    return handle


ENV_FLAGS = "iv0"
ENV_VALUED = "uCa"  # -S is read apart: its words take its place
ENV_LONG_FLAGS = _words(
    "ignore-environment null debug help version list-signal-handling "
    "block-signal default-signal ignore-signal"
)
ENV_LONG_VALUED = _words("unset chdir argv0")
MAX_SPLITS = 32


def _env(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [program args...]``.

    ``-S`` splits its string into words that take its place, options included
    (``env -S '-i rm x'``), as coreutils does.
    """
    i, splits = 1, 0
    while i < len(args) and _assignment_word(args[i]) is None:
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if value == "-":  # the same as -i
            i += 1
            continue
        if not value.startswith("-"):
            break
        option = _env_option(value, effective)
        if not option.splits:
            i += option.used
            continue
        code = option.string if option.used == 1 else _value_at(walker, args, i + 1, state)
        splits += 1
        if code is None or splits > MAX_SPLITS:
            effective.unknown.append("the string of `env -S` is only known when it runs")
            return [], state
        if "$" in code:
            effective.unknown.append("the string of `env -S` expands variables")
        try:
            words = shlex.split(code, comments=True)
        except ValueError:
            effective.unknown.append("the string of `env -S` could not be split")
            return [], state
        split = [*option.before, *(Arg(w, w) for w in words)]
        args = [*args[:i], *split, *args[i + option.used :]]
    while i < len(args):
        assignment = _assignment_word(args[i])
        if assignment is None:
            break
        walker.assignment(*assignment, args[i].raw, state)
        i += 1
    return _rest(args, i, effective, state), state


@dataclass(frozen=True)
class _EnvOption:
    used: int  # words the option takes (2: its value is the next word)
    splits: bool = False  # -S: its string becomes words
    string: str = ""  # -S's string when attached
    before: tuple[Arg, ...] = ()  # flags clustered before S (-vS...)


def _env_option(value: str, effective: Effective) -> _EnvOption:
    if value.startswith("--"):
        name, eq, attached = value[2:].partition("=")
        if name == "split-string":
            return _EnvOption(1 if eq else 2, splits=True, string=attached)
        if name in ENV_LONG_VALUED:
            return _EnvOption(1 if eq else 2)
        if name not in ENV_LONG_FLAGS:
            effective.unknown.append(f"`env` has an unknown option `{value}`")
        return _EnvOption(1)
    for index, letter in enumerate(value[1:], start=1):
        rest = value[index + 1 :]
        if letter == "S":
            before = (Arg(value[:index], value[:index]),) if index > 1 else ()
            return _EnvOption(1 if rest else 2, splits=True, string=rest, before=before)
        if letter in ENV_VALUED:
            return _EnvOption(1 if rest else 2)
        if letter not in ENV_FLAGS:
            effective.unknown.append(f"`env` has an unknown option `-{letter}`")
    return _EnvOption(1)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _assignment_word(arg: Arg) -> tuple[str, Arg] | None:
    """``NAME=VALUE`` as env reads it; the value may be only known at run time."""
    if arg.value is not None:
        name, eq, value = arg.value.partition("=")
        # env takes any word with "=" after a non-empty name (BASH_FUNC_x%%=...)
        return (name, Arg(value, value)) if eq and name else None
    match = _ASSIGNMENT.match(arg.raw)
    return (match.group()[:-1], Arg(arg.raw[match.end() :], None)) if match else None


def _value_at(walker: _Walker, args: list[Arg], index: int, state: _State) -> str | None:
    return walker.known(args[index], state) if index < len(args) else None


def _shell(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``bash [options] -c STRING [name args...]`` runs STRING; otherwise a script or input."""
    program = args[0].raw
    i, mode, informational = 1, "", False
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            name, eq, _ = value[2:].partition("=")
            informational = informational or name in ("version", "help")
            i += 2 if name in ("rcfile", "init-file") and not eq else 1
            continue
        if value[0] in "-+" and len(value) > 1:
            letters = value[1:]
            if "c" in letters:
                mode = "c"
            elif "s" in letters and not mode:
                mode = "s"
            i += 1 + letters.count("o") + letters.count("O")  # -o/-O take a name
            continue
        break
    operands = args[i:]
    if mode == "c":
        code = _value_at(walker, operands, 0, state)
        if code is None:
            effective.unknown.append(f"the commands of `{program} -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, f"the string of `{program} -c`")
    elif not informational:
        if operands and mode != "s":
            effective.unknown.append(
                f"`{program}` runs the script `{operands[0].raw}`, whose commands are not known"
            )
        else:
            effective.unknown.append(f"`{program}` runs the commands it reads from its input")
    return [], state


def _eval(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    effective.unknown.append("`eval` runs text as commands")
    values = [walker.known(a, state) for a in args[1:]]
    if values and all(v is not None for v in values):
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "eval")
    return [], state


def _source(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    effective.unknown.append(f"`{args[0].raw}` runs the commands of a file, which are not known")
    return [], state


WATCH = Options(
    flags="bcCeghprtwxv",
    valued="nq",
    attached="d",
    long_flags=_words(
        "beep color no-color errexit chgexit precise no-rerun no-title no-wrap exec help "
        "version differences"
    ),
    long_valued=_words("interval equexit"),
)


def _watch(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """watch joins its words and runs them with ``sh -c``; with ``-x`` they are argv."""
    start, found = parse_options(walker, args, WATCH, effective, state)
    rest = _rest(args, start, effective, state)
    if {name for name, _ in found} & {"x", "exec"}:
        return rest, state
    values = [walker.known(a, state) for a in rest]
    if any(v is None for v in values):
        effective.unknown.append("the command `watch` runs is only known when it runs")
    elif values:
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "watch")
    return [], state


XARGS = Options(
    flags="0oprtx",
    valued="adEILnPs",
    attached="eil",
    long_flags=_words(
        "null open-tty interactive no-run-if-empty verbose exit show-limits help version "
        "eof replace max-lines"
    ),
    long_valued=_words("arg-file delimiter max-args max-procs max-chars process-slot-var"),
)


def _xargs(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """xargs runs its program with words from its input appended, or put in for -I's string."""
    start, found = parse_options(walker, args, XARGS, effective, state)
    hole = None
    for name, value in found:
        if name in ("I", "i", "replace"):
            hole = (value.known if value is not None else None) or "{}"
    if hole is not None:
        state = replace(state, holes=(*state.holes, hole), appended=False)
    else:
        state = replace(state, appended=True)
    return args[start:], state  # no program: xargs runs echo


EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# find's tests and actions that take the next word as their value
FIND_VALUED = _words(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname "
    "-newer -anewer -cnewer -samefile -type -xtype -user -group -uid -gid -perm -size "
    "-mtime -mmin -atime -amin -ctime -cmin -used -links -inum -maxdepth -mindepth "
    "-fstype -printf -fprintf -fprint -fprint0 -fls -regextype -context -files0-from"
)


def _find(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """Each ``-exec``/``-execdir``/``-ok``/``-okdir`` runs a command of its own."""
    terminated = any(a.value in (";", "+") for a in args)
    i = 1
    while i < len(args):
        value = walker.known(args[i], state)
        if value in EXEC_ACTIONS:
            end = i + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            words = args[i + 1 : end]
            if words:
                inner = Effective(text=" ".join(w.raw for w in words))
                walker.analysis.commands.append(inner)
                walker.unwrap(list(words), inner, _State(state.depth, holes=("{}",)))
                guess_programs(inner, words)
            i = end + 1
            continue
        if value in FIND_VALUED:
            i += 2
            continue
        if value is None and args[i].value is None and terminated:
            # "$x" could be -exec itself, followed by a program
            effective.unknown.append("`find` gets an argument only known when it runs")
        i += 1
    return [], state


def _trap(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``trap ACTION SIGNAL...``: ACTION is shell code (one operand alone resets a signal)."""
    start, _ = parse_options(walker, args, Options(flags="lpP"), effective, state)
    operands = args[start:]
    if len(operands) >= 2:
        code = walker.known(operands[0], state)
        if code is None:
            effective.unknown.append("the action of `trap` is only known when it runs")
        elif code not in ("", "-"):
            walker.nested(code, effective, state, "the action of `trap`")
    return [], state


def _alias(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    for arg in args[1:]:
        value = walker.known(arg, state)
        if value is None:
            effective.unknown.append("an alias defined with a value only known when it runs")
            continue
        name, eq, code = value.partition("=")
        if eq and not value.startswith("-"):
            walker.nested(code, effective, state, f"the alias `{name}`")
    return [], state


def _hash(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``hash -p /bin/rm ls`` makes ``ls`` run /bin/rm: the path is a program too."""
    _, found = parse_options(walker, args, Options(flags="dlrt", valued="p"), effective, state)
    for name, value in found:
        if name != "p":
            continue
        program = walker.known(value, state) if value is not None else None
        if program is None:
            effective.unknown.append("`hash -p` gets a program only known when it runs")
        else:
            effective.names.append(os.path.basename(program))
    return [], state


SU = Options(
    flags="flmpPhV",
    valued="cgGsw",
    long_flags=_words("login preserve-environment pty fast help version"),
    long_valued=_words("command session-command group supp-group shell whitelist-environment"),
)


def _su(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``su [options] [-] [user] [-c STRING]``: options may follow the user."""
    codes: list[Arg | None] = []
    i = 1
    while i < len(args):
        i, found = parse_options(walker, args, SU, effective, state, start=i)
        codes += [v for n, v in found if n in ("c", "command", "session-command")]
        i += 1  # "-" or the user name
    if not codes:
        effective.unknown.append(f"`{args[0].raw}` starts a shell that reads its input")
    for value in codes:
        code = walker.known(value, state) if value is not None else None
        if code is None:
            effective.unknown.append(f"the commands of `{args[0].raw} -c` are only known later")
        else:
            walker.nested(code, effective, state, f"the string of `{args[0].raw} -c`")
    return [], state


FLOCK = Options(
    flags="sexnuoFhV",
    valued="wE",
    long_flags=_words("shared exclusive unlock nonblock close no-fork verbose help version"),
    long_valued=_words("timeout conflict-exit-code"),
)


def _flock(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``flock [options] FILE program args...`` or ``flock [options] FILE -c STRING``."""
    start, _ = parse_options(walker, args, FLOCK, effective, state)
    start = _operands(walker, args, start, 1, effective, state)
    rest = args[start:]
    flag = walker.known(rest[0], state) if rest else None
    if flag in ("-c", "--command") or (flag or "").startswith("--command="):
        code = flag.partition("=")[2] if flag and "=" in flag else _value_at(walker, rest, 1, state)
        if code is None:
            effective.unknown.append("the commands of `flock -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, "the string of `flock -c`")
        return [], state
    return _rest(args, start, effective, state), state


MAPFILE = Options(flags="t", valued="dnOsuCc")


def _mapfile(walker: _Walker, args: list[Arg], effective: Effective, state: _State) -> Result:
    """``mapfile -C CALLBACK`` evaluates CALLBACK as shell code."""
    _, found = parse_options(walker, args, MAPFILE, effective, state)
    for name, value in found:
        if name == "C":
            code = walker.known(value, state) if value is not None else None
            if code is None:
                effective.unknown.append("the callback of `mapfile -C` is only known later")
            else:
                walker.nested(code, effective, state, "the callback of `mapfile -C`")
    return [], state


def _long_help(more: str = "") -> frozenset[str]:
    return _words(f"help version {more}")


HANDLERS: dict[str, Handler] = {
    "sudo": run_as(SUDO),
    "doas": run_as(DOAS),
    "pkexec": run_as(PKEXEC),
    "env": _env,
    "command": wrapper(Options(flags="pvV")),
    "builtin": wrapper(Options()),
    "exec": wrapper(Options(flags="cl", valued="a")),
    "nohup": wrapper(Options(long_flags=_long_help())),
    "nice": wrapper(
        Options(valued="n", long_valued=_words("adjustment"), long_flags=_long_help(), numeric=True)
    ),
    "ionice": wrapper(
        Options(
            flags="tVh",
            valued="cnpPu",
            long_flags=_long_help("ignore"),
            long_valued=_words("class classdata pid pgid uid"),
        )
    ),
    "timeout": wrapper(
        Options(
            flags="v",
            valued="ks",
            long_flags=_long_help("foreground preserve-status verbose"),
            long_valued=_words("kill-after signal"),
        ),
        operands=1,
    ),
    "stdbuf": wrapper(
        Options(valued="ioe", long_valued=_words("input output error"), long_flags=_long_help())
    ),
    "time": wrapper(
        Options(
            flags="apqvV",
            valued="fo",
            long_flags=_long_help("append portability quiet verbose"),
            long_valued=_words("format output"),
        )
    ),
    "setsid": wrapper(Options(flags="cfwhV", long_flags=_long_help("ctty fork wait"))),
    "chroot": wrapper(
        Options(long_flags=_long_help("skip-chdir"), long_valued=_words("userspec groups")),
        operands=1,
    ),
    "taskset": wrapper(
        Options(flags="apchV", long_flags=_long_help("all-tasks pid cpu-list")), operands=1
    ),
    "chrt": wrapper(
        Options(
            flags="abdefiomprRvhV",
            valued="TPD",
            long_flags=_long_help("all-tasks batch deadline fifo idle max other pid rr verbose"),
            long_valued=_words("sched-runtime sched-period sched-deadline"),
        ),
        operands=1,
    ),
    "fakeroot": wrapper(
        Options(
            flags="uhv",
            valued="lsib",
            long_flags=_long_help("unknown-is-real"),
            long_valued=_words("lib faked fd-base"),
        )
    ),
    "unbuffer": wrapper(Options(flags="p")),
    **dict.fromkeys(("busybox", "toybox", "coproc"), wrapper(Options())),
    "watch": _watch,
    "xargs": _xargs,
    "find": _find,
    **dict.fromkeys(SHELLS, _shell),
    "eval": _eval,
    **dict.fromkeys(("source", "."), _source),
    "trap": _trap,
    "alias": _alias,
    "hash": _hash,
    **dict.fromkeys(("su", "runuser"), _su),
    "flock": _flock,
    **dict.fromkeys(("mapfile", "readarray"), _mapfile),
}


# ---------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Denial:
    rule: Rule
    command: str  # the command's source text
    matched: str  # the candidate the rule matched; "" for an unknown command
    reason: str = ""  # why an unknown command is unknown


@dataclass
class Decision:
    denial: Denial | None = None
    patterns: list[str] = field(default_factory=list)  # what a bash ask lists
    always: list[str] = field(default_factory=list)  # what an "always" reply allows
    needs_ask: bool = False  # a rule answers ask for some pattern
    force: bool = False  # unknown commands under rules that restrict: ask regardless
    unknown: list[str] = field(default_factory=list)  # why commands are unknown


def is_catch_all(pattern: str) -> bool:
    return bool(pattern) and set(pattern) <= {"*", " "}


def unrestricted(rules: Sequence[Rule]) -> bool:
    """True when no bash rule can deny or ask anything: the last catch-all bash rule
    and every bash rule after it allow (earlier rules can never decide)."""
    last = None
    for index, rule in enumerate(rules):
        if wildcard_match("bash", rule.permission) and is_catch_all(rule.pattern):
            last = index
    if last is None:
        return False  # nothing matches some commands: they ask
    return all(r.action == "allow" for r in rules[last:] if wildcard_match("bash", r.permission))


def decide(analysis: Analysis, rules: Sequence[Rule]) -> Decision:
    """Apply the ``bash`` rules (config, agent and approvals, in order) to a line."""
    commands = [c for c in analysis.commands if not c.is_cd]

    def action(pattern: str) -> Rule:
        return evaluate("bash", pattern, rules)

    for command in commands:
        denial = _denial(command, action)
        if denial is not None and command.unknown and is_catch_all(denial.rule.pattern):
            denial = replace(denial, matched="", reason=command.unknown[0])  # say why
        if denial is not None:
            return Decision(denial=denial)
    unknown = [c for c in commands if c.unknown]
    reasons = _unique(r for c in unknown for r in c.unknown)
    if unknown:
        catch_all = action("*")
        if catch_all.action == "deny":
            return Decision(denial=Denial(catch_all, unknown[0].text, "", reasons[0]))
    patterns = [c.text for c in commands]
    needs_ask = False
    for command in commands:
        verdicts = {check: action(check).action for check in command.checks()}
        if any(v != "allow" for v in verdicts.values()):
            needs_ask = True
            if verdicts[command.text] == "allow":  # make the ask show what it is about
                patterns += [check for check, v in verdicts.items() if v != "allow"]
    always = (
        []
        if analysis.parse_error
        else _unique(p for c in commands if not c.unknown for p in c.always_patterns())
    )
    return Decision(
        patterns=_unique(patterns),
        always=always,
        needs_ask=needs_ask,
        force=bool(unknown) and not unrestricted(rules),
        unknown=reasons,
    )


def _denial(command: Effective, action: Callable[[str], Rule]) -> Denial | None:
    """The first rule that denies the command by any of its spellings.

    Its own text and stages as spelled are denied by any rule, a catch-all too;
    the other spellings (``rm x`` for ``/bin/rm x``, ``rm``) only by rules that
    name something: under ``{"*": "deny", "git status": "allow"}`` the bare ``git``
    must not deny ``git status``.
    """
    own = set(command.checks())
    for candidate in command.deny_checks():
        rule = action(candidate)
        if rule.action == "deny" and (candidate in own or not is_catch_all(rule.pattern)):
            return Denial(rule, command.text, candidate)
    return None
