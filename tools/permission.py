"""Permission rules and the ask flow, following OpenCode's ``permission/next.ts``.

A ruleset is an ordered list of ``Rule``; the *last* rule whose permission and
pattern both wildcard-match decides, and with no match the answer is ``ask``.
Rule sources (built-in defaults, agent rules, config files, "always" approvals) are
simply concatenated, so a new source is one more list in ``PermissionService``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

from tools.errors import PermissionDeniedError, PermissionRejectedError

Action = Literal["allow", "deny", "ask"]
ReplyKind = Literal["once", "always", "reject"]
# Where an "always" is kept: this session, the project's or the user's config file;
# "sidecar" (a reply that names no scope): every session of this sidecar, as OpenCode.
Scope = Literal["sidecar", "session", "project", "user"]
SCOPES: tuple[Scope, ...] = ("sidecar", "session", "project", "user")


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


_ask_ids = itertools.count(1)
_ASK_PREFIX = secrets.token_hex(4)


def new_ask_id() -> str:
    return f"per_{_ASK_PREFIX}{next(_ask_ids):06x}"


@dataclass(frozen=True)
class AlwaysOption:
    """One thing an "always" can cover: its patterns, and what they mean in words."""

    id: str
    patterns: tuple[str, ...]
    label: str

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "patterns": list(self.patterns), "label": self.label}


def describe_patterns(permission: str, patterns: Iterable[str]) -> str:
    """What rules for ``patterns`` cover, in words ("commands starting `git status`")."""
    return ", ".join(_describe(permission, p) for p in patterns) or "nothing"


def _describe(permission: str, pattern: str) -> str:
    if permission == "bash":
        if pattern == "*":
            return "every command"
        if pattern.endswith(" *") and "*" not in pattern[:-2]:
            return f"commands starting `{pattern[:-2]}`"
        return f"the command `{pattern}`"
    if permission in ("edit", "read", "external_directory"):
        if pattern == "*":
            return "every file"
        if pattern.startswith("*.") and "/" not in pattern and "*" not in pattern[1:]:
            return f"files matching {pattern} (in any folder)"
        if pattern.endswith("/*") and "*" not in pattern[:-2]:
            return f"files in {pattern[:-1]} (and its subfolders)"
        if "*" not in pattern and "?" not in pattern:
            return f"the file {pattern}"
        return f"files matching {pattern}"
    if pattern == "*":
        return f"every `{permission}` call"
    return f"`{permission}` for {pattern}"


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
    # What "always" may cover; the first is the default (``always``). Empty: from ``always``.
    always_options: list[AlwaysOption] = field(default_factory=list)
    id: str = field(default_factory=new_ask_id)

    def options(self) -> list[AlwaysOption]:
        if self.always_options:
            return self.always_options
        if not self.always:
            return []
        label = describe_patterns(self.permission, self.always)
        return [AlwaysOption("default", tuple(self.always), label)]

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sessionID": self.session_id,
            "callID": self.call_id,
            "messageID": self.message_id,
            "tool": self.tool,
            "permission": self.permission,
            "patterns": self.patterns,
            "always": self.always,
            "title": self.title,
            "metadata": self.metadata,
            "alwaysOptions": [option.to_wire() for option in self.options()],
        }


UnsavedChoice = Literal["editor", "save"]


@dataclass(frozen=True)
class PermissionReply:
    """A person's answer; the review fields narrow an ``edit`` ask (docs/protocol.md)."""

    reply: ReplyKind
    message: str | None = None
    hunks: tuple[str, ...] | None = None  # hunk ids to apply (None: every hunk)
    files: tuple[str, ...] | None = None  # relative paths to apply whole
    edited: dict[str, str] | None = None  # relative path -> the text the person wants
    scope: Scope = "sidecar"  # where an "always" is kept
    always_option: str | None = None  # which of the ask's alwaysOptions (None: the first)
    unsaved: UnsavedChoice | None = None  # overlapping unsaved work: editor only, or save it
    notice: str | None = None  # set by the service: something the person should be told

    @property
    def narrowed(self) -> bool:
        return self.hunks is not None or self.files is not None


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

    def saved(self) -> list[Approval]:
        return []

    def remove(self, approval: Approval) -> None:
        raise SaveError("this host has no config files to remove rules from")


class SaveError(Exception):
    """A rule could not be saved to (or removed from) a config file: why, for a person."""


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
    if request.metadata.get("protected"):
        return PermissionRejectedError(
            f"This change ({', '.join(request.patterns)}) alters what the agent may do, so a "
            "person must approve it each time, and no one could be asked: the client answers "
            "no permission prompts. It was not made. The user can make the change, or approve "
            "it with `toolhost run --yes`."
        )
    example = {"permission": {request.permission: {request.patterns[0]: "allow"}}}
    return PermissionRejectedError(
        f"This call needs the `{request.permission}` permission for "
        f"{', '.join(request.patterns)}, and no one could be asked: the client answers no "
        "permission prompts. It was not run. A user can allow it in opencode.json, e.g. "
        f"{json.dumps(example)}, or approve it with `toolhost run --yes`."
    )


class PermissionService:
    """Evaluates asks against the rule sources and, for ``ask``, asks someone.

    "Always" approvals are kept by scope: with no scope named, in memory for every
    session of this worktree (as in OpenCode); ``session``: that session only;
    ``project`` / ``user``: saved to that config file by the ``RuleStore`` (and kept
    in memory too, so they hold before the config is read again).
    """

    def __init__(
        self, base_rules: Callable[[str], Ruleset], store: RuleStore | None = None
    ) -> None:
        self._base_rules = base_rules  # agent name -> defaults + agent + config rules
        self.store = store or RuleStore()
        self.approvals: list[Approval] = []
        # Asks waiting on a person, per session: what was asked, and a future another
        # reply can settle first (a reject rejects them all; an always may cover them).
        self._pending: dict[str, dict[asyncio.Future[PermissionReply], PermissionRequest]] = {}

    @property
    def approved(self) -> Ruleset:
        """The approvals that hold for every session."""
        return [a.rule for a in self.approvals if a.scope != "session"]

    def approved_for(self, session_id: str | None) -> Ruleset:
        return [
            a.rule for a in self.approvals if a.scope != "session" or a.session_id == session_id
        ]

    def ruleset(self, agent: str) -> Ruleset:
        return self._base_rules(agent)

    def evaluate(
        self, agent: str, permission: str, pattern: str, session_id: str | None = None
    ) -> Rule:
        return evaluate(permission, pattern, self.ruleset(agent), self.approved_for(session_id))

    async def ask(
        self,
        request: PermissionRequest,
        agent: str,
        asker: Asker,
        *,
        force: bool = False,
        policy: Policy | None = None,
    ) -> PermissionReply | None:
        """Return when every pattern is allowed; raise when one is denied or rejected.

        The person's reply is returned (None: the rules allowed it without asking), so
        a caller can use what it narrows.  ``force`` asks even when the rules allow every
        pattern (deny still wins): for calls whose effect the rules cannot see, like a
        command known only at run time.  ``policy`` (a sub-agent's session) decides
        instead of ``agent``'s rules, and keeps that session's "always" answers.
        """
        needed = self.needs_person(
            agent, request.permission, request.patterns, request.session_id, policy=policy
        )
        if not needed and not force:
            return None
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
            if policy is not None and reply.scope in ("sidecar", "session"):
                # A sub-agent's "always" stays in its session (tools.agents.policy).
                policy.remember(self._approved_rules(request, reply))
                reply = dataclasses.replace(reply, scope="session")
            else:
                reply = self._remember(request, reply)
                if policy is not None:  # saved to a config file: it counts in the child now
                    policy.remember(self._approved_rules(request, reply))
            self._allow_covered_pending(request.session_id, policy)
        return reply

    def _approved_rules(self, request: PermissionRequest, reply: PermissionReply) -> Ruleset:
        return [Rule(request.permission, p, "allow") for p in self._option(request, reply).patterns]

    def _option(self, request: PermissionRequest, reply: PermissionReply) -> AlwaysOption:
        """The alwaysOption the reply chose (the first when it names none)."""
        options = request.options()
        option = next((o for o in options if o.id == reply.always_option), None)
        if option is None:
            option = options[0] if options else AlwaysOption("default", (), "nothing")
        return option

    def _remember(self, request: PermissionRequest, reply: PermissionReply) -> PermissionReply:
        """Keep an "always" where the person chose; a save that fails stays in memory."""
        option = self._option(request, reply)
        if not option.patterns:  # an ask that offers no "always" (tools.protected): a once
            return reply
        scope, notice, source = reply.scope, None, None
        if scope in ("project", "user"):
            try:
                source = self.store.save(scope, request.permission, option.patterns)
            except SaveError as error:
                notice = (
                    f"toolhost could not save the rule to the {scope} config ({error}); "
                    "it holds for this session only."
                )
                scope = "session"
        for pattern in option.patterns:
            rule = Rule(request.permission, pattern, "allow")
            label = describe_patterns(request.permission, [pattern])
            session = request.session_id if scope == "session" else None
            self.approvals.append(Approval(rule, scope, label, session, source))
        return dataclasses.replace(reply, scope=scope, notice=notice)

    def rules(self, session_id: str | None = None) -> list[Approval]:
        """Every "always" kept in memory (of ``session_id``, or all) and every saved rule."""
        seen: set[str] = set()
        found: list[Approval] = []
        in_memory = [a for a in self.approvals if a.scope in ("sidecar", "session")]
        for approval in [*in_memory, *self.store.saved()]:
            if session_id and approval.scope == "session" and approval.session_id != session_id:
                continue
            if approval.id not in seen:
                seen.add(approval.id)
                found.append(approval)
        return found

    def revoke(self, rule_id: str) -> Approval | None:
        """Take back one rule (from memory, and from its config file); None: no such rule."""
        target = next((a for a in self.rules() if a.id == rule_id), None)
        if target is None:
            return None
        if target.scope in ("project", "user"):
            self.store.remove(target)
        self.approvals = [
            a
            for a in self.approvals
            if not (a.rule == target.rule and (a.id == rule_id or a.source == target.source))
        ]
        return target

    def needs_person(
        self,
        agent: str,
        permission: str,
        patterns: list[str],
        session_id: str | None = None,
        *,
        policy: Policy | None = None,
    ) -> bool:
        """True when a pattern's rule is ``ask``; raise when one is denied."""
        ruleset = self.ruleset(agent) if policy is None else []
        approved = self.approved_for(session_id) if policy is None else []
        needs_ask = False
        for pattern in patterns:
            if policy is not None:
                rule = policy.decide(permission, pattern)
            else:
                rule = evaluate(permission, pattern, ruleset, approved)
            if rule.action == "deny":
                matching = (
                    policy.relevant(permission)
                    if policy is not None
                    else [
                        r for r in (*ruleset, *approved) if wildcard_match(permission, r.permission)
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
        approved = self.approved_for(session_id)
        for future, request in list(self._pending.get(session_id, {}).items()):
            if not request.always:
                continue  # a forced ask (nothing to approve for next time) needs a person
            covered = all(
                (
                    policy.decide(request.permission, pattern)
                    if policy is not None
                    else evaluate(request.permission, pattern, approved)
                ).action
                == "allow"
                for pattern in request.patterns
            )
            if covered and not future.done():
                future.set_result(PermissionReply("once"))
