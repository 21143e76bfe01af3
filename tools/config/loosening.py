"""Does a new config allow anything the one in force does not?  And what holds meanwhile.

A config file changed on disk (by the user, a ``git checkout``, or an agent's write a
person approved) takes effect at once when it only tightens; one that loosens
anything waits until a person accepts it in the editor (``server.state``).  While
it waits, ``held`` is in force: the accepted config plus every restriction the new
one adds (its denials, the tools it switches off), so tightening is never delayed.

``loosenings`` is sound, not complete: when it finds nothing, the new config is
nowhere more permissive (for every agent's built-in rules below it); a change it
cannot prove harmless is listed, and a person is asked.  The rules are compared by
a greedy alignment of the two effective rule lists (last match wins): removing an
allow, lowering an action in place (allow to ask or deny, ask to deny) and
inserting a deny can only tighten; anything else counts as loosening.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import Field, fields, replace
from typing import Any

from tools.config.agents import AgentConfig
from tools.config.effective import Config
from tools.config.network import network_loosenings, stricter_network
from tools.config.rights import KINDS, Widening
from tools.permission.defaults import AGENT_RULES, default_rules
from tools.permission.rules import Rule, Ruleset, rules_from_config, wildcard_match
from tools.truncation import output_dir

_RANK = {"deny": 0, "ask": 1, "allow": 2}


def loosenings(old: Config, new: Config, tool_ids: Iterable[str] = ()) -> list[str]:
    """What ``new`` may allow that ``old`` does not, one phrase each ([]: nothing).

    Every key is compared by the kind its field declares (``tools.config.rights``):
    the rules together, below; each other key on its own.
    """
    found: list[str] = []
    change = _rules_loosening(old, new)
    if change is not None:
        found.append(change)
    ids = [*tool_ids]
    for key in fields(Config):
        kind = declared(key)
        if kind == "rules":
            continue  # compared above, all rule-bearing keys at once
        if kind == "per_agent":
            found += _agent_loosenings(old, new, ids)
            continue
        before, after = getattr(old, key.name), getattr(new, key.name)
        found += compare(kind, _name(key), before, after, key.metadata["default"], ids)
    return list(dict.fromkeys(found))


class UndeclaredKey(TypeError):
    """A config field without ``metadata=rights(...)``: nobody said whether it widens."""


def declared(key: Field[Any]) -> Widening:
    kind = key.metadata.get("rights")
    if kind not in KINDS:
        raise UndeclaredKey(
            f"config field {key.name!r} does not declare how it can widen what an agent may "
            "do: give it metadata=rights(...) (tools.config.rights)"
        )
    return kind  # type: ignore[no-any-return]


def compare(
    kind: Widening, name: str, before: Any, after: Any, default: float | None, ids: list[str]
) -> list[str]:
    """How ``after`` widens ``before`` for a key of ``kind``, in words ([]: it does not)."""
    match kind:
        case "harmless" | "rules" | "per_agent":
            return []
        case "switched_on":
            tools = sorted({*ids, *before, *after})
            return [
                f"the {t} tool is switched on"
                for t in tools
                if _on(after, t) and not _on(before, t)
            ]
        case "more":
            return [f"{name} adds {item!r}" for item in _added(before, after)]
        case "fewer":
            return [f"{name} no longer lists {item!r}" for item in _added(after, before)]
        case "on_widens":
            return [f"{name} is turned on"] if after and not before else []
        case "off_widens":
            return [f"{name} is turned off"] if before and not after else []
        case "higher_widens":
            low = float(default if before is None else before)  # type: ignore[arg-type]
            high = float(default if after is None else after)  # type: ignore[arg-type]
            return [f"{name} goes from {low:g} to {high:g}"] if high > low else []
        case "any_change":
            return [f"{name} changes"] if before != after else []
        case "network":
            return network_loosenings(before, after)
        case "per_field":
            found: list[str] = []
            for key in fields(after):
                values = getattr(before, key.name), getattr(after, key.name)
                sub = declared(key)
                found += compare(sub, f"{name}.{_name(key)}", *values, key.metadata["default"], ids)
            return found
    raise UndeclaredKey(f"unknown kind {kind!r} for {name}")


def _name(key: Field[Any]) -> str:
    return str(key.metadata.get("key") or key.name)


def _on(switches: Mapping[str, bool], tool_id: str) -> bool:
    """On unless the last key matching ``tool_id`` says off (``Config.is_enabled``)."""
    on = True
    for pattern, value in switches.items():
        if wildcard_match(tool_id, pattern):
            on = value
    return on


def _agent_loosenings(old: Config, new: Config, ids: list[str]) -> list[str]:
    """Each agent's keys compared by their kinds; a new agent is a widening."""
    found: list[str] = []
    for agent in new.agents:
        if agent not in old.agents and agent not in AGENT_RULES:
            found.append(f"agent {agent} is added")
        before, after = old.agents.get(agent, AgentConfig()), new.agents[agent]
        for key in fields(AgentConfig):
            kind = declared(key)
            name = f"agent.{agent}.{_name(key)}"
            values = getattr(before, key.name), getattr(after, key.name)
            found += compare(kind, name, *values, key.metadata["default"], ids)
    return found


def _rules_loosening(old: Config, new: Config) -> str | None:
    # Every agent either config names too: ``agent.<name>.permission`` is the last word
    # on that agent's rules, so a new entry there can loosen as much as ``permission``.
    for agent in dict.fromkeys(("build", *AGENT_RULES, *old.agents, *new.agents)):
        base = [*default_rules(output_dir()), *rules_from_config(AGENT_RULES.get(agent))]
        change = first_loosening(
            old.effective_rules(base, _agent_rules(old, agent)),
            new.effective_rules(base, _agent_rules(new, agent)),
        )
        if change is not None:
            return change if agent == "build" else f"{change} (agent {agent})"
    return None


def _agent_rules(config: Config, agent: str) -> Ruleset:
    entry = config.agents.get(agent)
    return rules_from_config(entry.permission) if entry is not None else []


def first_loosening(old: Sequence[Rule], new: Sequence[Rule]) -> str | None:
    """None when ``new`` is ``old`` with allows removed, actions lowered in place and
    denies inserted (each only tightens); else the first change that is not, in words."""
    i = 0
    for rule in new:
        while True:
            same = i < len(old) and (old[i].permission, old[i].pattern) == (
                rule.permission,
                rule.pattern,
            )
            if same and _RANK[rule.action] <= _RANK[old[i].action]:
                i += 1  # kept, or lowered in place
                break
            if rule.action == "deny":
                break  # inserted
            if i < len(old) and old[i].action == "allow":
                i += 1  # an allow removed: look at the next old rule
                continue
            return f"{rule.permission} {rule.pattern!r} is set to {rule.action}"
    for rule in old[i:]:
        if rule.action != "allow":
            return f"the rule {rule.permission} {rule.pattern!r} {rule.action} is removed"
    return None


def _added(before: Sequence[str], after: Sequence[str]) -> list[str]:
    kept = set(before)
    return [item for item in dict.fromkeys(after) if item not in kept]


def _lower(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def held(accepted: Config, new: Config) -> Config:
    """What is in force while ``new`` waits: ``accepted`` plus everything ``new`` forbids.

    A new config that is failing closed (a broken file) is held failing closed too.
    """
    denies: Ruleset = [r for r in (*new.source_rules, *new.salvaged) if r.action == "deny"]
    enabled = dict(accepted.enabled)
    for tool_id, on in new.enabled.items():
        if not on:
            enabled.pop(tool_id, None)
            enabled[tool_id] = False
    source = [*accepted.source_rules, *denies]
    result = replace(
        accepted,
        enabled=enabled,
        source_rules=source,
        salvaged=[*accepted.salvaged, *new.salvaged],
        problems=new.problems,
        allowed_commands=tuple(c for c in accepted.allowed_commands if c in new.allowed_commands),
        denied_commands=tuple(dict.fromkeys((*accepted.denied_commands, *new.denied_commands))),
        allowed_dirs=tuple(d for d in accepted.allowed_dirs if d in new.allowed_dirs),
        # The keys that widen one way tighten the other: the stricter of the two holds.
        primary_tools=tuple(dict.fromkeys((*accepted.primary_tools, *new.primary_tools))),
        continue_loop_on_deny=accepted.continue_loop_on_deny and new.continue_loop_on_deny,
        subagent_depth=_lower(accepted.subagent_depth, new.subagent_depth),
        sandbox=replace(
            accepted.sandbox,
            network=stricter_network(accepted.sandbox.network, new.sandbox.network),
        ),
    )
    return replace(result, rules=[*source, *result.tail(source)])
