"""``PermissionService``: evaluates a call's asks against the rule sources and, for ``ask``,
asks a person, remembering "always" by scope."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from tools.errors import PermissionDeniedError, PermissionRejectedError
from tools.permission.approvals import Approval, RuleStore, SaveError
from tools.permission.asks import (
    REJECTED,
    AlwaysOption,
    Asker,
    PermissionReply,
    PermissionRequest,
    describe_patterns,
)
from tools.permission.rules import Rule, Ruleset, evaluate, wildcard_match

if TYPE_CHECKING:
    import asyncio


class Policy(Protocol):
    """Rules that are not one ruleset: a sub-agent's session (``tools.agents.policy``)
    decides by several, and keeps its own "always" answers."""

    def decide(self, permission: str, pattern: str) -> Rule: ...

    def relevant(self, permission: str) -> list[Rule]: ...

    def remember(self, rules: list[Rule]) -> None: ...


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
        if not self.approvals:  # most asks: none given yet
            return []
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
        if request.options() and not request.rule_files:
            request.rule_files = self.store.targets()
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
        # An ask that offers no "always" (tools.permission.protected): a once.
        if not option.patterns:
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
        ruleset = self._base_rules(agent) if policy is None else []
        approved = self.approved_for(session_id) if policy is None else []
        needs_ask = False
        for pattern in patterns:
            if policy is not None:
                rule = policy.decide(permission, pattern)
            elif approved:
                rule = evaluate(permission, pattern, ruleset, approved)
            else:  # the same answer, without a pass over an empty list
                rule = evaluate(permission, pattern, ruleset)
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
        import asyncio  # where it runs: `toolhost list` never imports it

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
