"""What a per-program handler is: the walker as a handler sees it, the handler's
signature, and the operand helpers every family of handlers shares.

Handlers type against the ``Walker`` protocol below, not ``tools.bash.walker``, so
the walker can import the table of handlers without the table importing it back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tools.bash.commands import Analysis, Effective, State
from tools.bash.shell_parse import Arg


class Walker(Protocol):
    """What a handler uses of ``tools.bash.walker.Walker``."""

    analysis: Analysis

    def unwrap(self, args: list[Arg], effective: Effective, state: State) -> None:
        """Follow ``args`` as a command of its own, through its wrappers."""

    def nested(self, code: str, effective: Effective, state: State, what: str) -> None:
        """Check the commands of shell code the program will run."""

    def assignment(self, name: str, value: Arg, text: str, state: State) -> None:
        """Check a variable the program sets (``env NAME=VALUE``)."""

    def known(self, arg: Arg, state: State) -> str | None:
        """The word's value when it is literal and no placeholder fills it at run time."""

    def option(self, arg: Arg, state: State, effective: Effective) -> str | None:
        """A word where an option may stand, or None when only known at run time."""


Result = tuple[list[Arg], State]  # the words of the program started (none: no program)
Handler = Callable[[Walker, list[Arg], Effective, State], Result]


def program_at(args: list[Arg], start: int, effective: Effective, state: State) -> list[Arg]:
    """The program a wrapper starts; with none given, xargs may supply it."""
    rest = args[start:]
    if not rest and state.appended:
        effective.unknown.append("the program comes from xargs' input")
    return rest


def skip_operands(
    walker: Walker, args: list[Arg], start: int, count: int, effective: Effective, state: State
) -> int:
    """Skip ``count`` fixed operands (timeout's DURATION...); an expansion could shift them."""
    for arg in args[start : start + count]:
        if walker.known(arg, state) is None:
            effective.unknown.append(f"`{args[0].raw}` gets an operand only known when it runs")
    return start + count


def value_at(walker: Walker, args: list[Arg], index: int, state: State) -> str | None:
    """The literal value of ``args[index]``, or None when it is missing or not literal."""
    return walker.known(args[index], state) if index < len(args) else None
