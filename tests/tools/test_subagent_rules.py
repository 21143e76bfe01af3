"""A child session can never do more than its parent or its sub-agent (hypothesis).

Random configs, sub-agent rules, "always" answers in the parent and in the child;
then every permission and pattern is asked through the real ``ToolContext.ask`` in
the child session.  The expected outcome is computed from two plain top-level
evaluations, the parent's (with its approvals) and the sub-agent's own (with the
denies every child gets): deny if either denies, ask if either asks (unless the
child's own approvals cover it), else allow.  Any other outcome is an escalation
(or a needless refusal) and fails the test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.agents.policy import combine
from tools.config.agents import AgentConfig
from tools.config.effective import Config
from tools.context import ToolContext
from tools.errors import PermissionDeniedError
from tools.host import ToolHost
from tools.permission.approvals import Approval
from tools.permission.asks import PermissionReply, PermissionRequest
from tools.permission.rules import Rule, evaluate, rules_from_config

PERMISSIONS = ["read", "edit", "bash", "webfetch", "task", "todowrite", "question"]
RULE_PATTERNS = ["*", "a*", "ab", "src/*", "x"]
ASKED = ["ab", "abc", "src/x", "x", "zz"]
ACTIONS = ["allow", "ask", "deny"]

permission_map = st.dictionaries(
    st.sampled_from([*PERMISSIONS, "*"]),
    st.one_of(
        st.sampled_from(ACTIONS),
        st.dictionaries(st.sampled_from(RULE_PATTERNS), st.sampled_from(ACTIONS), max_size=3),
    ),
    max_size=5,
)
approvals = st.lists(
    st.builds(Rule, st.sampled_from(PERMISSIONS), st.sampled_from(RULE_PATTERNS), st.just("allow")),
    max_size=4,
)


def approve(host: ToolHost, rules: list[Rule]) -> None:
    """ "Always" answers given in the parent (kept for every session, as in OpenCode)."""
    host.permissions.approvals.extend(Approval(rule, "sidecar", rule.pattern) for rule in rules)


class Recorder:
    """Answers every ask with "once" and remembers what was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        self.asked.append((request.permission, request.patterns[0]))
        return PermissionReply("once")


def outcome(host: ToolHost, session_id: str, agent: str, permission: str, pattern: str) -> str:
    from tools.editor import EditorBridge

    recorder = Recorder()
    editor = EditorBridge()
    editor.ask_permission = recorder.ask_permission  # type: ignore[method-assign]
    ctx = ToolContext(
        host=host,
        session=host.sessions.get(session_id),
        tool=permission,
        call_id="call_x",
        agent=agent,
        editor=editor,
    )
    try:
        asyncio.run(ctx.ask(permission, [pattern], [pattern]))
    except PermissionDeniedError:
        return "deny"
    return "ask" if recorder.asked else "allow"


def top_level(config: Config, agent: str, extra: list[Rule], approved: list[Rule]) -> Any:
    """A plain evaluator for ``agent`` as a top-level session (the oracle's half)."""
    host = ToolHost(Path("/nonexistent-worktree"), config=config)
    rules = [*host.permissions.ruleset(agent), *extra]

    def action(permission: str, pattern: str) -> str:
        return evaluate(permission, pattern, rules, approved).action

    return action


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config_permission=permission_map,
    sub_permission=permission_map,
    parent_approved=approvals,
    child_approved=approvals,
    parent_agent=st.sampled_from(["build", "plan", "explore"]),
    declares_task=st.booleans(),
)
def test_no_escalation(
    config_permission: dict[str, Any],
    sub_permission: dict[str, Any],
    parent_approved: list[Rule],
    child_approved: list[Rule],
    parent_agent: str,
    declares_task: bool,
) -> None:
    if declares_task:
        sub_permission = {**sub_permission, "task": "ask"}
    config = Config(
        rules=rules_from_config(config_permission),
        agents={"helper": AgentConfig(mode="subagent", permission=sub_permission)},
    )
    host = ToolHost(Path("/nonexistent-worktree"), config=config)
    approve(host, parent_approved)
    agent = host.agents["helper"]
    child = host.new_child("ses_parent", parent_agent, agent, "t", None)
    child.policy.remember(list(child_approved))

    # The oracle: two top-level evaluations, combined by hand.
    parent = top_level(config, parent_agent, [], parent_approved)
    child_denies = [
        Rule(p, "*", "deny") for p in ("todowrite", "todoread", "task") if not agent.declares(p)
    ]
    sub = top_level(config, "helper", child_denies, [])

    escalations = []
    for permission in PERMISSIONS:
        for pattern in ASKED:
            sides = {parent(permission, pattern), sub(permission, pattern)}
            if "deny" in sides:
                expected = "deny"
            elif "ask" in sides:
                covered = evaluate(permission, pattern, child_approved).action == "allow"
                expected = "allow" if covered else "ask"
            else:
                expected = "allow"
            got = outcome(host, child.session_id, "helper", permission, pattern)
            if got != expected:
                escalations.append((permission, pattern, expected, got))
    assert escalations == []


@settings(max_examples=100, deadline=None)
@given(
    config_permission=permission_map,
    first=permission_map,
    second=permission_map,
    parent_approved=approvals,
)
def test_a_grandchild_is_bounded_by_every_ancestor(
    config_permission: dict[str, Any],
    first: dict[str, Any],
    second: dict[str, Any],
    parent_approved: list[Rule],
) -> None:
    """With subagent_depth 2, a child's child is judged by the root, the child and itself."""
    config = Config(
        rules=rules_from_config(config_permission),
        agents={
            "one": AgentConfig(mode="subagent", permission={**first, "task": "allow"}),
            "two": AgentConfig(mode="subagent", permission=second),
        },
        subagent_depth=2,
    )
    host = ToolHost(Path("/nonexistent-worktree"), config=config)
    approve(host, parent_approved)
    child = host.new_child("ses_root", "build", host.agents["one"], "t", None)
    grandchild = host.new_child(child.session_id, "one", host.agents["two"], "t", None)
    assert grandchild.depth == 2
    for permission in PERMISSIONS:
        for pattern in ASKED:
            upper = child.policy.decide(permission, pattern).action
            own = combine(permission, pattern, [host.child_rules(host.agents["two"])]).action
            got = grandchild.policy.decide(permission, pattern).action
            rank = {"allow": 0, "ask": 1, "deny": 2}
            assert rank[got] >= max(rank[upper], rank[own]), (permission, pattern)


def test_an_always_in_the_parent_does_not_lift_the_sub_agents_deny(tmp_path: Path) -> None:
    config = Config(agents={"nobash": AgentConfig(mode="subagent", permission={"bash": "deny"})})
    host = ToolHost(tmp_path, config=config)
    approve(host, [Rule("bash", "*", "allow")])
    child = host.new_child("ses_p", "build", host.agents["nobash"], "t", None)
    assert outcome(host, child.session_id, "nobash", "bash", "ls") == "deny"
    assert outcome(host, "ses_p", "build", "bash", "ls") == "allow"


def test_an_always_in_the_child_stays_in_the_child(tmp_path: Path) -> None:
    config = Config(rules=rules_from_config({"bash": "ask"}))
    host = ToolHost(tmp_path, config=config)
    child = host.new_child("ses_p", "build", host.agents["general"], "t", None)

    class Always(Recorder):
        async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
            return PermissionReply("always")

    from tools.editor import EditorBridge

    editor = EditorBridge()
    editor.ask_permission = Always().ask_permission  # type: ignore[method-assign]
    ctx = ToolContext(
        host=host,
        session=host.sessions.get(child.session_id),
        tool="bash",
        call_id="c",
        agent="general",
        editor=editor,
    )
    asyncio.run(ctx.ask("bash", ["ls"], ["ls *"]))
    assert outcome(host, child.session_id, "general", "bash", "ls -la") == "allow"
    assert host.permissions.approved == []  # the parent still asks
    assert outcome(host, "ses_p", "build", "bash", "ls -la") == "ask"


@pytest.mark.parametrize("permission", ["todowrite", "todoread", "task"])
def test_todos_and_task_are_denied_unless_the_sub_agent_names_them(
    tmp_path: Path, permission: str
) -> None:
    config = Config(agents={"own": AgentConfig(mode="subagent", permission={permission: "allow"})})
    host = ToolHost(tmp_path, config=config)
    plain = host.new_child("ses_p", "build", host.agents["explore"], "t", None)
    declared = host.new_child("ses_p", "build", host.agents["own"], "t", None)
    assert plain.policy.decide(permission, "*").action == "deny"
    assert declared.policy.decide(permission, "*").action == "allow"


def test_task_is_hidden_at_the_depth_limit(tmp_path: Path) -> None:
    config = Config(agents={"own": AgentConfig(mode="subagent", permission={"task": "allow"})})
    host = ToolHost(tmp_path, config=config)
    child = host.new_child("ses_p", "build", host.agents["own"], "t", None)
    assert host.hidden_in(child, "task")  # depth 1 of 1
    host.set_config(Config(agents=config.agents, subagent_depth=2))
    assert not host.hidden_in(child, "task")
