"""How a change to each config key can widen what an agent may do, declared beside the key.

Every field of ``Config`` and ``AgentConfig`` carries ``metadata=rights(kind)``;
``tools.config.loosening`` compares an old and a new config key by key according to
its kind, and refuses to run on a field without one, so a key added later cannot be
forgotten (``tests/security/test_config_rights.py`` fails first).  The kinds:

``rules``          compared as permission rules (the effective rule lists)
``switched_on``    a map of tool id to on/off: a tool that goes on widens
``more``           a list where an added item widens (allowed commands, folders)
``fewer``          a list where a removed item widens (denied commands, primary-only tools)
``on_widens``      a flag that widens when it goes from false to true
``off_widens``     a flag that widens when it goes from true to false
``higher_widens``  a number that widens when it grows (``default``: what None means)
``any_change``     anything else: any change counts as widening (endpoints, the sandbox mode)
``network``        ``sandbox.network``: deny < the domain lists < allow; a list that allows
                   more or denies less widens (``tools.config.network``)
``per_agent``      the agents, each compared field by field (a new agent counts)
``per_field``      a group of keys (``sandbox``), each compared by its own declaration
``harmless``       cannot widen anything (wording, output limits, sampling)
"""

from __future__ import annotations

from typing import Any, Literal

Widening = Literal[
    "rules",
    "switched_on",
    "more",
    "fewer",
    "on_widens",
    "off_widens",
    "higher_widens",
    "any_change",
    "network",
    "per_agent",
    "per_field",
    "harmless",
]
KINDS: tuple[str, ...] = Widening.__args__  # type: ignore[attr-defined]


def rights(kind: Widening, key: str = "", *, default: float | None = None) -> dict[str, Any]:
    """A field's ``metadata``: how it can widen, the key as written in a config file
    (for the person's prompt; the field's name when empty), and what None means."""
    return {"rights": kind, "key": key, "default": default}
