"""Permission rules and the ask flow, following OpenCode's ``permission/next.ts``.

A ruleset is an ordered list of ``Rule``; the *last* rule whose permission and
pattern both wildcard-match decides, and with no match the answer is ``ask``.
Rule sources (built-in defaults, agent rules, config files, "always" approvals) are
simply concatenated, so a new source is one more list in ``PermissionService``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

from tools.errors import PermissionDeniedError, PermissionRejectedError

Action = Literal["allow", "deny", "ask"]
ReplyKind = Literal["once", "always", "reject"]


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


class IndexedRules(list[Rule]):
    """A ruleset that remembers, per permission name, which of its rules apply.

    Every ask evaluates against the same few rulesets; most rules name another
    permission, so matching the name once per ruleset saves most of the work.
    Treat it as read-only: the memo is not updated by list mutations.
    """

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        super().__init__(rules)
        self._for: dict[str, list[Rule]] = {}

    def for_permission(self, permission: str) -> list[Rule]:
        found = self._for.get(permission)
        if found is None:
            found = [r for r in self if wildcard_match(permission, r.permission)]
            self._for[permission] = found
        return found


def evaluate(permission: str, pattern: str, *rulesets: Iterable[Rule]) -> Rule:
    """The last matching rule across the concatenated rulesets, else an ``ask`` rule."""
    for ruleset in reversed(rulesets):
        if isinstance(ruleset, IndexedRules):
            for rule in reversed(ruleset.for_permission(permission)):
                if wildcard_match(pattern, rule.pattern):
                    return rule
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


def expand_home(pattern: str) -> str:
    home = str(Path.home())
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


def default_rules(tool_output_dir: Path) -> Ruleset:
    """OpenCode's built-in defaults (reference §3.3)."""
    return rules_from_config(
        {
            "*": "allow",
            "doom_loop": "ask",
            "external_directory": {"*": "ask", f"{tool_output_dir.as_posix()}/*": "allow"},
            "question": "deny",
            "plan_enter": "deny",
            "plan_exit": "deny",
            "read": {"*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow"},
        }
    )


_READ_ONLY_TOOLS = ("grep", "glob", "list", "bash", "webfetch", "websearch", "codesearch", "read")

AGENT_RULES: dict[str, dict[str, Any]] = {
    "build": {"question": "allow", "plan_enter": "allow"},
    "plan": {
        "question": "allow",
        "task": {"general": "deny"},
        "edit": {"*": "deny", ".opencode/plans/*.md": "allow"},
    },
    "explore": {"*": "deny", **dict.fromkeys(_READ_ONLY_TOOLS, "allow")},
    "general": {"todowrite": "deny", "todoread": "deny"},
}


# Tools whose permission name differs from their id (the edit family shares "edit").
PERMISSION_OF_TOOL = {"write": "edit", "multiedit": "edit", "apply_patch": "edit", "patch": "edit"}


def permission_name(tool_id: str) -> str:
    return PERMISSION_OF_TOOL.get(tool_id, tool_id)


@dataclass
class PermissionRequest:
    session_id: str
    call_id: str
    message_id: str
    tool: str
    permission: str
    patterns: list[str]
    always: list[str]
    title: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionID": self.session_id,
            "callID": self.call_id,
            "messageID": self.message_id,
            "tool": self.tool,
            "permission": self.permission,
            "patterns": self.patterns,
            "always": self.always,
            "title": self.title,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class PermissionReply:
    reply: ReplyKind
    message: str | None = None


Asker = Callable[[PermissionRequest], Awaitable[PermissionReply]]


class Policy(Protocol):
    """Rules that are not one ruleset: a sub-agent's session (``tools.agents.policy``)
    decides by several, and keeps its own "always" answers."""

    def decide(self, permission: str, pattern: str) -> Rule: ...

    def relevant(self, permission: str) -> list[Rule]: ...

    def remember(self, rules: list[Rule]) -> None: ...


REJECTED = "The user rejected permission to use this specific tool call."


def headless_rejection(request: PermissionRequest) -> PermissionRejectedError:
    """What a call gets when nobody can be asked: a rejection that says how to allow it."""
    example = {"permission": {request.permission: {request.patterns[0]: "allow"}}}
    return PermissionRejectedError(
        f"This call needs the `{request.permission}` permission for "
        f"{', '.join(request.patterns)}, and no one could be asked: the client answers no "
        "permission prompts. It was not run. A user can allow it in opencode.json, e.g. "
        f"{json.dumps(example)}, or approve it with `toolhost run --yes`."
    )


class PermissionService:
    """Evaluates asks against the rule sources and, for ``ask``, asks someone.

    "Always" approvals live here, in memory, for every session of this worktree
    (as in OpenCode: they are not written to disk).
    """

    def __init__(self, base_rules: Callable[[str], Ruleset]) -> None:
        self._base_rules = base_rules  # agent name -> defaults + agent + config rules
        self.approved: Ruleset = []
        # Asks waiting on a person, per session: what was asked, and a future another
        # reply can settle first (a reject rejects them all; an always may cover them).
        self._pending: dict[str, dict[asyncio.Future[PermissionReply], PermissionRequest]] = {}

    def ruleset(self, agent: str) -> Ruleset:
        return self._base_rules(agent)

    def evaluate(self, agent: str, permission: str, pattern: str) -> Rule:
        return evaluate(permission, pattern, self.ruleset(agent), self.approved)

    async def ask(
        self,
        request: PermissionRequest,
        agent: str,
        asker: Asker,
        *,
        force: bool = False,
        policy: Policy | None = None,
    ) -> None:
        """Return when every pattern is allowed; raise when one is denied or rejected.

        ``force`` asks even when the rules allow every pattern (deny still wins): for
        calls whose effect the rules cannot see, like a command known only at run time.
        ``policy`` decides instead of ``agent``'s rules, and keeps the "always" answers.
        """
        if (
            not self.needs_person(agent, request.permission, request.patterns, policy=policy)
            and not force
        ):
            return
        reply = await self._ask_once(request, asker)
        if reply.reply == "reject":
            self._reject_pending(request.session_id)
            if reply.message:
                raise PermissionRejectedError(
                    "The user rejected permission to use this specific tool call with the "
                    f"following feedback: {reply.message}",
                    metadata={"feedback": reply.message},
                )
            raise PermissionRejectedError(REJECTED)
        if reply.reply == "always":
            approved = [Rule(request.permission, p, "allow") for p in request.always]
            if policy is not None:
                policy.remember(approved)
            else:
                self.approved.extend(approved)
            self._allow_covered_pending(request.session_id, policy)

    def needs_person(
        self, agent: str, permission: str, patterns: list[str], *, policy: Policy | None = None
    ) -> bool:
        """True when a pattern's rule is ``ask``; raise when one is denied."""
        ruleset = self.ruleset(agent) if policy is None else []
        needs_ask = False
        for pattern in patterns:
            if policy is not None:
                rule = policy.decide(permission, pattern)
            else:
                rule = evaluate(permission, pattern, ruleset, self.approved)
            if rule.action == "deny":
                matching = (
                    policy.relevant(permission)
                    if policy is not None
                    else [
                        r
                        for r in (*ruleset, *self.approved)
                        if wildcard_match(permission, r.permission)
                    ]
                )
                relevant = [r.to_wire() for r in matching]
                raise PermissionDeniedError(
                    "The user has specified a rule which prevents you from using this specific "
                    f"tool call. Here are some of the relevant rules {json.dumps(relevant)}",
                    metadata={"rule": rule.to_wire()},
                )
            if rule.action == "ask":
                needs_ask = True
        return needs_ask

    async def _ask_once(self, request: PermissionRequest, asker: Asker) -> PermissionReply:
        # The client's answer races with a reply to another ask of the same session.
        loop = asyncio.get_running_loop()
        settled_elsewhere: asyncio.Future[PermissionReply] = loop.create_future()
        pending = self._pending.setdefault(request.session_id, {})
        pending[settled_elsewhere] = request
        answer = asyncio.ensure_future(asker(request))
        try:
            done, _ = await asyncio.wait(
                {answer, settled_elsewhere}, return_when=asyncio.FIRST_COMPLETED
            )
            if answer in done:
                return answer.result()
            return settled_elsewhere.result()
        finally:
            pending.pop(settled_elsewhere, None)
            if not answer.done():
                answer.cancel()  # withdraws the prompt from the client

    def _reject_pending(self, session_id: str) -> None:
        for future in list(self._pending.get(session_id, {})):
            if not future.done():
                future.set_result(PermissionReply("reject"))

    def _allow_covered_pending(self, session_id: str, policy: Policy | None = None) -> None:
        """Settle waiting asks of the session that the "always" approvals now cover."""
        for future, request in list(self._pending.get(session_id, {}).items()):
            if not request.always:
                continue  # a forced ask (nothing to approve for next time) needs a person
            covered = all(
                (
                    policy.decide(request.permission, pattern)
                    if policy is not None
                    else evaluate(request.permission, pattern, self.approved)
                ).action
                == "allow"
                for pattern in request.patterns
            )
            if covered and not future.done():
                future.set_result(PermissionReply("once"))
