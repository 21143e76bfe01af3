"""OpenCode's rule engine: a ruleset is an ordered list of ``Rule``; the *last* rule whose
permission and pattern both wildcard-match decides, and with no match the answer is ``ask``.
Rule sources (built-in defaults, agent rules, config files, "always" approvals) are simply
concatenated, so a new source is one more list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

Action = Literal["allow", "deny", "ask"]


@dataclass(frozen=True)
class Rule:
    permission: str
    pattern: str
    action: Action

    def to_wire(self) -> dict[str, str]:
        return {"permission": self.permission, "pattern": self.pattern, "action": self.action}


Ruleset = list[Rule]


@lru_cache(maxsize=4096)
def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    pattern = pattern.replace("\\", "/")
    # A trailing " *" also matches the bare command: "ls *" matches "ls".
    optional_tail = pattern.endswith(" *")
    body = pattern[:-2] if optional_tail else pattern
    parts = []
    for ch in body:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    regex = "".join(parts)
    if optional_tail:
        regex += "( .*)?"
    return re.compile(f"^{regex}$", re.DOTALL)


def wildcard_match(text: str, pattern: str) -> bool:
    """OpenCode's wildcard: ``*`` crosses ``/``, ``?`` is one character, anchored."""
    if pattern == "*":
        return True
    return _wildcard_regex(pattern).match(text.replace("\\", "/")) is not None


MAX_REMEMBERED_MATCHES = 4096


class IndexedRules(list[Rule]):
    """A ruleset that remembers, per permission name, which of its rules apply.

    Every ask evaluates against the same few rulesets; most rules name another
    permission, so matching the name once per ruleset saves most of the work.
    Treat it as read-only: the memos (rules per permission, the rule matching a
    permission and pattern) are not updated by list mutations.
    """

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        super().__init__(rules)
        self._for: dict[str, list[Rule]] = {}
        # (permission, pattern) -> the last rule matching both: the same asks come back
        # call after call (a file's read, the doom-loop check of a tool).
        self._last: dict[tuple[str, str], Rule | None] = {}

    def for_permission(self, permission: str) -> list[Rule]:
        found = self._for.get(permission)
        if found is None:
            found = [r for r in self if wildcard_match(permission, r.permission)]
            self._for[permission] = found
        return found

    def last_match(self, permission: str, pattern: str) -> Rule | None:
        """The last rule matching both ``permission`` and ``pattern``, else None."""
        key = (permission, pattern)
        try:
            return self._last[key]
        except KeyError:
            pass
        found = None
        for rule in reversed(self.for_permission(permission)):
            if wildcard_match(pattern, rule.pattern):
                found = rule
                break
        if len(self._last) >= MAX_REMEMBERED_MATCHES:  # patterns are open-ended: stay bounded
            self._last.clear()
        self._last[key] = found
        return found


def evaluate(permission: str, pattern: str, *rulesets: Iterable[Rule]) -> Rule:
    """The last matching rule across the concatenated rulesets, else an ``ask`` rule."""
    for ruleset in reversed(rulesets):
        if isinstance(ruleset, IndexedRules):
            found = ruleset.last_match(permission, pattern)
            if found is not None:
                return found
            continue
        rules: list[Rule] = ruleset if isinstance(ruleset, list) else list(ruleset)
        for rule in reversed(rules):
            if wildcard_match(permission, rule.permission) and wildcard_match(
                pattern, rule.pattern
            ):
                return rule
    return Rule(permission, "*", "ask")


def disabled_by_rules(permission: str, *rulesets: Iterable[Rule]) -> bool:
    """OpenCode hides a tool when the last rule for its permission is a blanket deny.

    A pattern-specific deny (``bash: {"rm *": "deny"}``) does not hide the tool.
    """
    last: Rule | None = None
    for ruleset in rulesets:
        for rule in ruleset:
            if wildcard_match(permission, rule.permission):
                last = rule
    return last is not None and last.pattern == "*" and last.action == "deny"


@lru_cache(maxsize=4)
def _home(home_variable: str | None) -> str:
    """``Path.home()``, once per value of ``$HOME`` (which it follows): the sandbox's
    plan expands a dozen ``~/`` paths on every bash call."""
    return str(Path.home())


def expand_home(pattern: str) -> str:
    if not pattern.startswith(("~", "$HOME")):  # most: no need to look the home up
        return pattern
    home = _home(os.environ.get("HOME"))
    if pattern == "~" or pattern == "$HOME":
        return home
    for prefix in ("~/", "$HOME/"):
        if pattern.startswith(prefix):
            return home + "/" + pattern[len(prefix) :]
    return pattern


def rules_from_config(permission: str | Mapping[str, Any] | None) -> Ruleset:
    """OpenCode's ``permission`` config: one action, per-tool actions, or pattern maps."""
    if permission is None:
        return []
    if isinstance(permission, str):
        return [Rule("*", "*", _action(permission, "permission"))]
    rules: Ruleset = []
    for perm, value in permission.items():
        if isinstance(value, str):
            rules.append(Rule(perm, "*", _action(value, f"permission.{perm}")))
        elif isinstance(value, Mapping):
            for pattern, action in value.items():
                where = f"permission.{perm}.{pattern}"
                rules.append(Rule(perm, expand_home(str(pattern)), _action(action, where)))
        else:
            raise ValueError(f"permission.{perm} must be an action or a map of pattern to action")
    return rules


def _action(value: object, where: str) -> Action:
    if value in ("allow", "deny", "ask"):
        return value
    raise ValueError(f"{where} must be one of allow, ask, deny (got {value!r})")


# Tools whose permission name differs from their id (the edit family shares "edit").
PERMISSION_OF_TOOL = {"write": "edit", "multiedit": "edit", "apply_patch": "edit", "patch": "edit"}


def permission_name(tool_id: str) -> str:
    return PERMISSION_OF_TOOL.get(tool_id, tool_id)
