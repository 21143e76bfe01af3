"""A sub-agent's rules: never more than its parent's, never more than its own.

A child session started by ``task`` is judged by several rulesets at once, its
*sides*: every side of the session that started it (for a top-level session, that
agent's rules plus the "always" answers given so far) and the sub-agent's own rules
(built-in defaults, the agent's rules, the config, the agent's config
``permission``, then the denies every sub-agent gets: ``todowrite``/``todoread``/
``task`` unless it names them itself, and ``experimental.primary_tools``).

For one permission and pattern:

* **deny** when any side denies it (nothing the child is told can lift a deny);
* else **ask** when any side asks, unless a person already answered "always" to
  that ask *in this child* (those answers are the child's own: they never reach the
  parent, and the parent's answers count only on the parent's side);
* else **allow**.

So the child can never do without asking what the parent would have had to ask
about, nor anything the parent or the sub-agent may not do.  OpenCode 1.18.33 copies
only the parent's denies into the child; this is stricter on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tools.permission.rules import Rule, Ruleset, disabled_by_rules, evaluate, wildcard_match

Sides = Callable[[], list[Ruleset]]


class ChildPolicy:
    def __init__(self, parent_sides: Sides, own_side: Callable[[], Ruleset]) -> None:
        self._parent_sides = parent_sides
        self._own_side = own_side
        self.approvals: Ruleset = []  # "always" answers given to this child's asks

    def sides(self) -> list[Ruleset]:
        """Every ruleset a call must pass, the parent's first."""
        return [*self._parent_sides(), self._own_side()]

    def decide(self, permission: str, pattern: str) -> Rule:
        return combine(permission, pattern, self.sides(), self.approvals)

    def relevant(self, permission: str) -> list[Rule]:
        """The rules of every side (and this child's approvals) that name ``permission``."""
        found: list[Rule] = []
        for side in [*self.sides(), self.approvals]:
            found += [r for r in side if wildcard_match(permission, r.permission)]
        return found

    def remember(self, rules: list[Rule]) -> None:
        self.approvals.extend(rules)

    def hides(self, permission: str) -> bool:
        """A tool is not offered to the child when any side switches it off entirely."""
        return any(disabled_by_rules(permission, side) for side in self.sides())


def combine(
    permission: str, pattern: str, sides: Sequence[Sequence[Rule]], approvals: Sequence[Rule] = ()
) -> Rule:
    """The decision of several rulesets together (see the module docstring)."""
    asking: Rule | None = None
    allowing: Rule | None = None
    for side in sides:
        rule = evaluate(permission, pattern, side)
        if rule.action == "deny":
            return rule
        if rule.action == "ask":
            asking = asking or rule
        else:
            allowing = rule
    if asking is not None:
        answered = evaluate(permission, pattern, approvals)
        return answered if answered.action == "allow" else asking
    return allowing or Rule(permission, "*", "ask")
