"""The effective configuration every source normalises into (``Config``), what one source
contributes (``ConfigLayer``), and the rules a broken or untrusted source appends so that
the config fails closed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.config.errors import ConfigProblem
from tools.config.rights import rights
from tools.permission.rules import Rule, Ruleset, wildcard_match
from tools.truncation import MAX_BYTES, MAX_LINES

if TYPE_CHECKING:
    from tools.config.agents import AgentConfig, ProviderConfig

# What an untrusted folder still runs without asking (when the rules allow it): the
# tools that only read, or only keep the session's own notes.  Everything else asks.
# OpenCode's default ``subagent_depth``: a sub-agent may not start sub-agents of its own.
DEFAULT_SUBAGENT_DEPTH = 1

READ_ONLY_PERMISSIONS = (
    *("read", "glob", "grep", "list", "lsp", "skill", "todoread", "todowrite", "question"),
)


@dataclass(frozen=True)
class ToolOutputLimits:
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES


SANDBOX_MODES = ("auto", "required", "off")
SANDBOX_NETWORKS = ("allow", "deny")
SANDBOX_LISTS = ("writable", "caches", "hidden", "repositories")
NETWORK_LISTS = ("allow", "deny")


@dataclass(frozen=True)
class NetworkLists:
    """``sandbox.network: {allow: [...], deny: [...]}``: commands reach the network only
    through toolhost's proxy, to what ``allow`` lists (``tools.network.patterns``), never
    to what ``deny`` lists; anything else asks a person."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxSettings:
    """``sandbox`` in opencode.json, or the bash entry's ``sandbox`` in tools.yaml.

    ``caches`` and ``hidden`` None: the built-in lists (tools.bash.sandbox.settings).
    """

    mode: str = field(default="auto", metadata=rights("any_change"))  # auto | required | off
    # allow | deny | the domain lists
    network: str | NetworkLists = field(default="allow", metadata=rights("network"))
    # more directories commands may write
    writable: tuple[str, ...] = field(default=(), metadata=rights("more"))
    # package caches commands may write (None: the built-in list)
    caches: tuple[str, ...] | None = field(default=None, metadata=rights("any_change"))
    # paths covered from commands (sockets; None: the built-in list)
    hidden: tuple[str, ...] | None = field(default=None, metadata=rights("any_change"))
    # folders in which (and below which) commands may make a git repository
    repositories: tuple[str, ...] = field(default=(), metadata=rights("more"))


@dataclass(frozen=True)
class CheckpointSettings:
    """``checkpoints`` in opencode.json (ours): how long undo keeps a worktree's turns,
    whether changes made beside toolhost during a turn are looked for, and how long a
    session's calls without a turn id may pause and still be one turn."""

    max_age_days: float = 14.0
    max_bytes: int = 512 << 20
    outside: bool = True
    idle_seconds: float = 30.0  # a call without a turn after this long begins a new one


CHECKPOINT_KEYS = {
    "maxAgeDays": "max_age_days",
    "maxBytes": "max_bytes",
    "outside": "outside",
    "idleSeconds": "idle_seconds",
}


@dataclass(frozen=True)
class Config:
    # tool id (or wildcard) -> on/off; the last matching key decides
    enabled: Mapping[str, bool] = field(
        default_factory=dict, metadata=rights("switched_on", "tools")
    )
    # Appended after the built-in and agent rules; includes the fail-closed rules.
    rules: Ruleset = field(default_factory=list, metadata=rights("rules", "permission"))
    tool_output: ToolOutputLimits = field(
        default=ToolOutputLimits(), metadata=rights("harmless", "tool_output")
    )
    # Sources that could not be used; when any, the config fails closed (which the
    # rules compared show: failing closed is stricter, fixing it looser).
    problems: tuple[ConfigProblem, ...] = field(default=(), metadata=rights("rules"))
    # The sources' own rules, before the fail-closed rules were added.
    source_rules: Ruleset = field(default_factory=list, metadata=rights("rules", "permission"))
    # The denials read from sources that could not be used (``tools.config.salvage``).
    salvaged: Ruleset = field(default_factory=list, metadata=rights("rules", "permission"))
    # The folder is not trusted (``tools.permission.trust``): all but the read-only tools ask.
    untrusted: bool = field(default=False, metadata=rights("off_widens", "trust"))
    # The YAML registry's bash lists and directories, in source order (the bash
    # tool checks every command a line could run against these).
    allowed_commands: tuple[str, ...] = field(default=(), metadata=rights("more"))
    denied_commands: tuple[str, ...] = field(default=(), metadata=rights("fewer"))
    allowed_dirs: tuple[str, ...] = field(default=(), metadata=rights("more"))
    # Sub-agents and model endpoints (``tools.config.agents``).
    agents: Mapping[str, AgentConfig] = field(
        default_factory=dict, metadata=rights("per_agent", "agent")
    )
    # Where the code and prompts are sent: a new endpoint is a new recipient.
    providers: Mapping[str, ProviderConfig] = field(
        default_factory=dict, metadata=rights("any_change", "provider")
    )
    model: str | None = field(default=None, metadata=rights("any_change"))  # "provider/model"
    subagent_depth: int | None = field(
        default=None, metadata=rights("higher_widens", default=DEFAULT_SUBAGENT_DEPTH)
    )
    # Tools only a primary agent gets: one removed from the list reaches sub-agents.
    primary_tools: tuple[str, ...] = field(
        default=(), metadata=rights("fewer", "experimental.primary_tools")
    )
    continue_loop_on_deny: bool = field(
        default=False, metadata=rights("on_widens", "experimental.continue_loop_on_deny")
    )
    sandbox: SandboxSettings = field(
        default=SandboxSettings(), metadata=rights("per_field", "sandbox")
    )
    # Undo's retention and the idle time that ends a turn: what can be put back, not
    # what the agent may do.
    checkpoints: CheckpointSettings = field(
        default=CheckpointSettings(), metadata=rights("harmless", "checkpoints")
    )

    def is_enabled(self, tool_id: str) -> bool:
        on = True
        for pattern, value in self.enabled.items():
            if wildcard_match(tool_id, pattern):
                on = value
        return on

    @property
    def failing_closed(self) -> bool:
        return bool(self.problems)

    def effective_rules(self, base: Ruleset, agent_rules: Sequence[Rule] = ()) -> Ruleset:
        """``base`` (built-in and agent rules) followed by this config's rules, then
        ``agent_rules`` (the config's ``agent.<name>.permission``, last as in OpenCode).

        When failing closed, the stricter tail is computed over ``base`` too, so an
        agent's own deny (the plan agent's edits) is not weakened to an ask.
        """
        if not self.problems and not self.untrusted:
            return [*base, *self.rules, *agent_rules]
        combined = [*base, *self.source_rules, *agent_rules]
        return [*combined, *self.tail(combined)]

    def tail(self, rules: Sequence[Rule]) -> Ruleset:
        """What failing closed (or an untrusted folder) appends to ``rules``."""
        if self.problems:
            return fail_closed_rules(rules, [*self.source_rules, *self.salvaged])
        return untrusted_rules(rules) if self.untrusted else []


@dataclass
class ConfigLayer:
    """What one source contributes; ``None`` limits leave the earlier value."""

    enabled: dict[str, bool] = field(default_factory=dict)
    rules: Ruleset = field(default_factory=list)
    max_lines: int | None = None
    max_bytes: int | None = None
    allowed_commands: list[str] = field(default_factory=list)
    denied_commands: list[str] = field(default_factory=list)
    allowed_dirs: list[str] = field(default_factory=list)
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    model: str | None = None
    subagent_depth: int | None = None
    primary_tools: list[str] | None = None
    continue_loop_on_deny: bool | None = None
    # The sandbox keys this source sets (mode, network, writable, caches, hidden,
    # repositories).
    sandbox: dict[str, Any] = field(default_factory=dict)
    # The checkpoints keys it sets (CheckpointSettings' field names).
    checkpoints: dict[str, Any] = field(default_factory=dict)


def at_most_ask(rules: Sequence[Rule], permission: str = "*") -> Ruleset:
    """Rules that, appended to ``rules``, turn every allow of ``permission`` into ask.

    A catch-all ask, then every earlier rule that applies, narrowed to ``permission``,
    with allow turned into ask.  Evaluation then gives deny where ``rules`` gave deny
    and ask everywhere else, for every permission ``permission`` matches, while every
    other permission is untouched.
    """
    tail: Ruleset = [Rule(permission, "*", "ask")]
    for rule in rules:
        if permission == "*":
            narrowed = rule.permission
        elif wildcard_match(permission, rule.permission):
            narrowed = permission
        else:
            continue
        tail.append(Rule(narrowed, rule.pattern, "ask" if rule.action == "allow" else rule.action))
    return tail


def fail_closed_rules(rules: Sequence[Rule], sources: Sequence[Rule] | None = None) -> Ruleset:
    """What a config with a broken source appends to ``rules``: every permission at
    most ask, then every deny a config source states (``sources``: the readable
    sources' rules and those salvaged from the broken ones; ``rules`` when not given),
    even one a later rule overrode, so that each of them holds."""
    stated = rules if sources is None else sources
    return [*at_most_ask(rules), *(rule for rule in stated if rule.action == "deny")]


def untrusted_rules(rules: Sequence[Rule]) -> Ruleset:
    """What an untrusted folder appends to ``rules``: every permission at most ask, but
    the read-only ones, which keep exactly what ``rules`` say."""
    tail = at_most_ask(rules)
    for permission in READ_ONLY_PERMISSIONS:
        tail.append(Rule(permission, "*", "ask"))
        tail += [
            Rule(permission, rule.pattern, rule.action)
            for rule in rules
            if wildcard_match(permission, rule.permission)
        ]
    return tail
