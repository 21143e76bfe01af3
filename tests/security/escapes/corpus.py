"""The cases of the escape corpus, loaded from ``cases/<class>.toml``.

A case is data: the shell script that attacks (``attack``, run in the sandbox with the
project as its working directory), what is set up before it outside any sandbox
(``setup``, from the case's root folder), what runs outside after it (``after``: the
editor's ``git status`` that obeys a planted ``core.fsmonitor``), the services the
world needs (``services``: listeners, a victim process, a headless Neovim, a tmux
server; ``sockets``: Unix listeners by path, ``@name`` for abstract ones) and the
proof of the escape (``proof``: exactly one of ``file``, ``changed``, ``heard``,
``output``, ``alive``, ``victim``).

Words in braces are filled per run (``{project}``, ``{outside}``, ``{marker}``,
``{tag}``...: ``world.World.values``); other braces (``${HOME}``, awk) are left alone.
``expect = "allowed"`` marks a control, not an attack: the allowed domain, which a
sandbox set up with the domain list must let through.  ``known`` maps a sandbox's name
to why it is known not to hold the case (the test expects that failure, and fails
when it starts to hold, so the note is kept true).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent / "cases"
CLASSES = ("writes", "protected", "git", "sockets", "processes", "network")
PROOFS = ("file", "changed", "heard", "output", "alive", "victim")
SERVICES = frozenset({"victim", "tcp", "tcp6", "udp", "nvim-tmp", "nvim-runtime", "tmux"})
NEEDS = frozenset(
    {"git", "nvim", "tmux", "gdb", "root", "internet", "host-ip", "ipv6-global", "unshare"}
)
_FIELDS = {
    *("id", "title", "setup", "attack", "after", "needs", "services", "sockets", "end"),
    *("abort_after", "domains", "expect", "cleanup", "proof", "known", "timeout"),
}
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


@dataclass(frozen=True)
class Case:
    id: str
    klass: str
    title: str
    attack: str
    proof: tuple[str, str]  # (kind, value)
    setup: str = ""
    after: str = ""
    needs: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    sockets: tuple[str, ...] = ()
    end: bool = False  # end the sandbox's session before the proof is looked at
    abort_after: float | None = None  # the command is killed after this many seconds
    domains: bool = False  # meaningful only with the domain list set up
    expect: str = "escape"  # or "allowed": a control the sandbox must let through
    cleanup: tuple[str, ...] = ()  # paths outside the world to remove afterwards
    known: dict[str, str] = field(default_factory=dict)  # sandbox -> why it is not held
    timeout: float = 20.0


def fill(text: str, values: dict[str, str]) -> str:
    """``text`` with every ``{name}`` in ``values`` replaced; other braces kept."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def load(classes: tuple[str, ...] = CLASSES) -> list[Case]:
    cases: list[Case] = []
    for klass in classes:
        with (CASES_DIR / f"{klass}.toml").open("rb") as handle:
            data = tomllib.load(handle)
        cases += [_case(klass, raw) for raw in data.get("case", [])]
    ids = [c.id for c in cases]
    doubled = sorted({i for i in ids if ids.count(i) > 1})
    if doubled:
        raise ValueError(f"case ids used twice: {', '.join(doubled)}")
    return cases


def _case(klass: str, raw: dict[str, Any]) -> Case:
    where = f"{klass}.toml case {raw.get('id', '?')!r}"
    unknown = set(raw) - _FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    proof = raw.get("proof", {})
    if len(proof) != 1 or next(iter(proof)) not in PROOFS:
        raise ValueError(f"{where}: proof must be one of {', '.join(PROOFS)}, got {proof}")
    kind, value = next(iter(proof.items()))
    needs, services = tuple(raw.get("needs", ())), tuple(raw.get("services", ()))
    if set(needs) - NEEDS or set(services) - SERVICES:
        raise ValueError(f"{where}: unknown needs or services {needs} {services}")
    if raw.get("expect", "escape") not in ("escape", "allowed"):
        raise ValueError(f"{where}: expect is escape or allowed")
    abort = raw.get("abort_after")
    return Case(
        id=raw["id"],
        klass=klass,
        title=raw["title"],
        attack=raw["attack"],
        proof=(kind, str(value)),
        setup=raw.get("setup", ""),
        after=raw.get("after", ""),
        needs=needs,
        services=services,
        sockets=tuple(raw.get("sockets", ())),
        end=bool(raw.get("end", False)),
        abort_after=float(abort) if abort is not None else None,
        domains=bool(raw.get("domains", False)),
        expect=raw.get("expect", "escape"),
        cleanup=tuple(raw.get("cleanup", ())),
        known=dict(raw.get("known", {})),
        timeout=float(raw.get("timeout", 20.0)),
    )
