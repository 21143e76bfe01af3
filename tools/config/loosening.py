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

from collections.abc import Iterable, Sequence
from dataclasses import replace

from tools.config.effective import Config
from tools.permission.defaults import AGENT_RULES, default_rules
from tools.permission.rules import Rule, Ruleset, rules_from_config
from tools.truncation import output_dir

_RANK = {"deny": 0, "ask": 1, "allow": 2}


def loosenings(old: Config, new: Config, tool_ids: Iterable[str] = ()) -> list[str]:
    """What ``new`` may allow that ``old`` does not, one phrase each ([]: nothing)."""
    found: list[str] = []
    # Every agent either config names too: ``agent.<name>.permission`` is the last word
    # on that agent's rules, so a new entry there can loosen as much as ``permission``.
    for agent in dict.fromkeys(("build", *AGENT_RULES, *old.agents, *new.agents)):
        base = [*default_rules(output_dir()), *rules_from_config(AGENT_RULES.get(agent))]
        change = first_loosening(
            old.effective_rules(base, _agent_rules(old, agent)),
            new.effective_rules(base, _agent_rules(new, agent)),
        )
        if change is not None:
            found.append(change if agent == "build" else f"{change} (agent {agent})")
            break
    ids = {*tool_ids, *old.enabled, *new.enabled}
    found += [f"the {t} tool is switched on" for t in sorted(ids) if _turned_on(old, new, t)]
    found += [
        f"command {c!r} is allowed" for c in _added(old.allowed_commands, new.allowed_commands)
    ]
    found += [
        f"command {c!r} is no longer denied"
        for c in _added(new.denied_commands, old.denied_commands)
    ]
    found += [f"folder {d} is allowed" for d in _added(old.allowed_dirs, new.allowed_dirs)]
    if new.sandbox != old.sandbox:  # any change counts: which ones widen is not worth guessing
        found.append("the bash sandbox's settings change")
    return list(dict.fromkeys(found))


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


def _turned_on(old: Config, new: Config, tool_id: str) -> bool:
    return new.is_enabled(tool_id) and not old.is_enabled(tool_id)


def _added(before: Sequence[str], after: Sequence[str]) -> list[str]:
    kept = set(before)
    return [item for item in dict.fromkeys(after) if item not in kept]


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
    )
    return replace(result, rules=[*source, *result.tail(source)])
