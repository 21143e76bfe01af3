"""``env``: its options, the ``NAME=VALUE`` words it sets (checked like assignments),
and ``-S``, whose string is split into words that take its place."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import Handler, Result, Walker, program_at, value_at
from tools.bash.programs.options import words
from tools.bash.shell_parse import Arg

ENV_FLAGS = "iv0"
ENV_VALUED = "uCa"  # -S is read apart: its words take its place
ENV_LONG_FLAGS = words(
    "ignore-environment null debug help version list-signal-handling "
    "block-signal default-signal ignore-signal"
)
ENV_LONG_VALUED = words("unset chdir argv0")
MAX_SPLITS = 32


def _env(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
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
        code = option.string if option.used == 1 else value_at(walker, args, i + 1, state)
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
    return program_at(args, i, effective, state), state


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


HANDLERS: dict[str, Handler] = {"env": _env}
