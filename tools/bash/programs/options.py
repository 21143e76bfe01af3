"""Reading a program's options as its getopt string would: which words are options
(and their values) and where its operands start.

An option's value is never mistaken for the program a wrapper starts, and anything
a spec does not know makes the command unknown rather than a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import Walker
from tools.bash.shell_parse import Arg


@dataclass(frozen=True)
class Options:
    """A program's options, as its getopt string would list them."""

    flags: str = ""  # short options without a value
    valued: str = ""  # short options that take a value (attached or next word)
    attached: str = ""  # short options whose value can only be attached (-d[=x])
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    numeric: bool = False  # -5 is an option (nice)


def words(names: str) -> frozenset[str]:
    """The names in a string of words, as a set."""
    return frozenset(names.split())


def long_help(more: str = "") -> frozenset[str]:
    """GNU's ``--help`` and ``--version``, and the long flags in ``more``."""
    return words(f"help version {more}")


def gnu_options(
    flags: str = "", valued: str = "", long_flags: str = "", long_valued: str = ""
) -> Options:
    """Options written as strings of words, with GNU's ``--help`` and ``--version``."""
    return Options(
        flags=flags,
        valued=valued,
        long_flags=long_help(long_flags),
        long_valued=words(long_valued),
    )


def parse_options(
    walker: Walker,
    args: list[Arg],
    spec: Options,
    effective: Effective,
    state: State,
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
