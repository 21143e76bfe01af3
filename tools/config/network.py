"""``sandbox.network`` as a config key: reading the domain lists, how a change to it widens
what commands may reach, and the stricter of two settings.

``allow`` (every destination), ``deny`` (none), or ``{allow: [...], deny: [...]}``
(``tools.network.patterns``; through toolhost's proxy, asking a person for what neither
list covers). From widest to narrowest: ``allow``, the lists, ``deny``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools.config.effective import NETWORK_LISTS, NetworkLists
from tools.config.errors import ConfigError, KeyPath, show

Network = str | NetworkLists


def read_network(value: Any, where: KeyPath, errors: list[ConfigError]) -> NetworkLists | None:
    """The object form; every mistake appended to ``errors`` (None: not usable)."""
    if not isinstance(value, Mapping):
        errors.append(
            ConfigError(
                f'expected one of allow, deny, or {{"allow": [...], "deny": [...]}}, got '
                f"{show(value)}",
                where,
            )
        )
        return None
    found: dict[str, tuple[str, ...]] = {}
    usable = True
    for key, items in value.items():
        at: KeyPath = (*where, key)
        if key not in NETWORK_LISTS:
            errors.append(ConfigError("unknown key (expected allow or deny)", at))
            usable = False
            continue
        if not isinstance(items, list):
            errors.append(ConfigError(f"expected a list of domains, got {show(items)}", at))
            usable = False
            continue
        patterns: list[str] = []
        for index, item in enumerate(items):
            problem = pattern_problem(item)
            if problem is not None:
                errors.append(ConfigError(problem, (*at, index)))
                usable = False
            else:
                patterns.append(str(item).strip())
        found[key] = tuple(patterns)
    return NetworkLists(**found) if usable else None


def pattern_problem(item: Any) -> str | None:
    """Why ``item`` is not a domain pattern, for a person (None: it is one)."""
    if not isinstance(item, str):
        return (
            f"expected a domain such as pypi.org, *.npmjs.org or github.com:443, got {show(item)}"
        )
    # Imported when a config lists domains: the start of a sidecar without lists needs
    # none of it (two dataclasses, the parser).
    from tools.network.patterns import BadHost, parse_pattern

    try:
        parse_pattern(item)
    except BadHost as error:
        return (
            f"{error}; expected a domain such as pypi.org, *.npmjs.org or github.com:443, "
            "or an address"
        )
    return None


def network_loosenings(before: Network, after: Network) -> list[str]:
    """How ``after`` lets commands reach more than ``before``, in words ([]: it does not)."""
    if before == after or after == "deny" or before == "allow":
        return []
    if after == "allow":
        return ["sandbox.network is set to allow (every destination)"]
    if not isinstance(after, NetworkLists):
        return [f"sandbox.network changes to {after!r}"]  # unknown: a person decides
    if before == "deny" or not isinstance(before, NetworkLists):
        shown = ", ".join(after.allow) or "nothing listed; the rest is asked"
        return [f"sandbox.network goes from deny to the domain lists (allow: {shown})"]
    found = [f"sandbox.network.allow adds {p!r}" for p in after.allow if p not in before.allow]
    found += [
        f"sandbox.network.deny no longer lists {p!r}" for p in before.deny if p not in after.deny
    ]
    return found


def stricter_network(a: Network, b: Network) -> Network:
    """What holds when both apply (a config waiting for a person beside the accepted one):
    ``deny`` over everything; of two lists, what both allow and what either denies."""
    if a == "deny" or b == "deny":
        return "deny"
    if a == "allow":
        return b
    if b == "allow":
        return a
    if isinstance(a, NetworkLists) and isinstance(b, NetworkLists):
        allow = tuple(p for p in a.allow if p in b.allow)
        return NetworkLists(allow, tuple(dict.fromkeys((*a.deny, *b.deny))))
    return "deny"  # a value neither knows: the strictest
