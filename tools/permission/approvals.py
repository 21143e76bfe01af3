"""The "always" answers a person gave, and the store that saves those of scope project and
user into config files."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.permission.asks import Scope
from tools.permission.rules import Rule


@dataclass(frozen=True)
class Approval:
    """An "always" answer (or a saved rule), with where it is kept and what it covers."""

    rule: Rule
    scope: Scope
    label: str
    session_id: str | None = None  # scope "session"
    source: Path | None = None  # scope "project" / "user": the config file

    @property
    def id(self) -> str:
        owner = self.session_id if self.scope == "session" else self.source
        return json.dumps([self.scope, str(owner or ""), self.rule.permission, self.rule.pattern])

    def to_wire(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": self.id,
            **self.rule.to_wire(),
            "scope": self.scope,
            "label": self.label,
        }
        if self.session_id:
            item["sessionID"] = self.session_id
        if self.source:
            item["source"] = str(self.source)
        return item


class RuleStore:
    """Where "always" rules of scope project and user are saved (``tools.config.saved``)."""

    def save(self, scope: Scope, permission: str, patterns: Iterable[str]) -> Path:
        raise SaveError("this host has no config files to save rules in")

    def targets(self) -> dict[str, str]:
        """Per saved scope ("project", "user"), the file an "always" would be written to."""
        return {}

    def own_write(self, path: Path, before: str | None, now: str | None) -> bool:
        """True when this store's own writes alone took ``path`` from hash ``before`` to
        ``now`` (None: absent)."""
        return False

    def settled(self, path: Path, digest: str | None) -> None:
        """``path`` holding ``digest`` is now accepted: its writes up to there are spent."""

    def saved(self) -> list[Approval]:
        return []

    def remove(self, approval: Approval) -> None:
        raise SaveError("this host has no config files to remove rules from")


class SaveError(Exception):
    """A rule could not be saved to (or removed from) a config file: why, for a person."""
