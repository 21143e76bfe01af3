"""What the analysis of a bash line finds: each command, seen through its wrappers.

``tools.bash.walker`` fills these in; ``tools.bash.decision`` judges them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tools.bash.arity import prefix
from tools.bash.shell_parse import Arg


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
        return unique([self.text, *(s.spelled for s in self.stages)])

    def deny_checks(self) -> list[str]:
        """What no rule may deny."""
        return unique(
            [
                *self.checks(),
                *(s.by_name for s in self.stages),
                *(s.name for s in self.stages if s.name),
                *self.names,
            ]
        )

    def always_patterns(self) -> list[str]:
        globs = [" ".join(prefix(s.words())) + " *" for s in self.stages]
        return unique([self.always, *globs] if self.always else globs)

    @property
    def innermost(self) -> Stage | None:
        return self.stages[-1] if self.stages else None


@dataclass
class Analysis:
    text: str
    parse_error: bool
    commands: list[Effective] = field(default_factory=list)  # outer before nested
    redirects: list[Arg] = field(default_factory=list)  # files redirections open
    written: list[Arg] = field(default_factory=list)  # those opened for writing
    # NAME -> its literal value where the line assigns one (None: several, or not literal)
    variables: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class State:
    depth: int
    holes: tuple[str, ...] = ()  # placeholders filled at run time: find's {}, xargs -I's
    appended: bool = False  # xargs adds words from its input after these


def guess_programs(effective: Effective, argv: Sequence[Arg]) -> None:
    """An unknown command may run any of its literal words (``$x rm y``, ``timeout $t
    rm y``): each is checked against the rules that name programs."""
    if effective.unknown:
        effective.names += [
            os.path.basename(a.value) for a in argv[1:] if a.value and not a.value.startswith("-")
        ]


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
