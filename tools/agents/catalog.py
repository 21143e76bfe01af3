"""The agents ``task`` can start: OpenCode 1.18.33's built-ins and the config's ``agent``.

OpenCode's built-in agents are ``build`` and ``plan`` (primary) and ``general`` and
``explore`` (sub-agents); ``agent.<name>`` in the config refines one of them or adds
one (mode ``all`` unless it says otherwise), and ``disable: true`` removes it.  The
rules an agent runs under are built by ``ToolHost`` (defaults, the agent's built-in
rules, the config's ``permission``, then the agent's own ``permission``); this module
only knows what each agent *is*.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tools.config.agents import AgentConfig
from tools.model import ModelRef
from tools.permission.defaults import AGENT_RULES
from tools.permission.rules import Ruleset, rules_from_config

# OpenCode 1.18.33's descriptions: the model reads them in task's list of sub-agents.
BUILTIN_DESCRIPTIONS = {
    "build": "The default agent. Executes tools based on configured permissions.",
    "plan": "Plan mode. Disallows all edit tools.",
    "general": "General-purpose agent for researching complex questions and executing "
    "multi-step tasks. Use this agent to execute multiple units of work in parallel.",
    "explore": "Fast agent specialized for exploring codebases. Use this when you need to "
    'quickly find files by patterns (eg. "src/components/**/*.tsx"), search code for '
    'keywords (eg. "API endpoints"), or answer questions about the codebase (eg. "how do '
    'API endpoints work?"). When calling this agent, specify the desired thoroughness '
    'level: "quick" for basic searches, "medium" for moderate exploration, or "very '
    'thorough" for comprehensive analysis across multiple locations and naming conventions.',
}
BUILTIN_MODES = {
    "build": "primary",
    "plan": "primary",
    "general": "subagent",
    "explore": "subagent",
}

# What the sidecar's own runner tells a sub-agent that has no prompt of its own.
EXPLORE_PROMPT = (
    "You are a fast, read-only code search agent. Find what you were asked for with the "
    "glob, grep, list and read tools, then answer with the file paths (and line numbers) "
    "that matter and a short explanation. Do not change any file."
)

NO_DESCRIPTION = "This subagent should only be called manually by the user."
LIST_HEADING = "Available agent types and the tools they have access to:"


@dataclass(frozen=True)
class Agent:
    name: str
    mode: str  # subagent | primary | all
    description: str | None = None
    model: ModelRef | None = None
    prompt: str | None = None
    native: bool = False
    hidden: bool = False
    steps: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    # The agent's own rules: its built-in ones, then its config ``permission``.
    builtin_rules: Ruleset = field(default_factory=list)
    config_rules: Ruleset = field(default_factory=list)
    # Tool ids its config switches off (``tools: {"bash": false}``).
    disabled_tools: frozenset[str] = frozenset()

    def declares(self, permission: str) -> bool:
        """True when the agent itself names ``permission`` (its built-in or config rules)."""
        return any(
            rule.permission == permission for rule in (*self.builtin_rules, *self.config_rules)
        )


def model_ref(value: str | None) -> ModelRef | None:
    if not value:
        return None
    provider, _, model = value.partition("/")
    return ModelRef(provider, model)


def agents_from_config(configured: Mapping[str, AgentConfig]) -> dict[str, Agent]:
    """The built-in agents refined, removed and extended by ``agent`` in the config."""
    agents: dict[str, Agent] = {
        name: Agent(
            name=name,
            mode=BUILTIN_MODES[name],
            description=BUILTIN_DESCRIPTIONS[name],
            prompt=EXPLORE_PROMPT if name == "explore" else None,
            native=True,
            builtin_rules=rules_from_config(AGENT_RULES.get(name)),
        )
        for name in BUILTIN_MODES
    }
    for name, entry in configured.items():
        if entry.disable:
            agents.pop(name, None)
            continue
        base = agents.get(name) or Agent(name=name, mode="all")
        agents[name] = Agent(
            name=name,
            mode=entry.mode or base.mode,
            description=entry.description if entry.description is not None else base.description,
            model=model_ref(entry.model) or base.model,
            prompt=entry.prompt if entry.prompt is not None else base.prompt,
            native=base.native,
            hidden=entry.hidden if entry.hidden is not None else base.hidden,
            steps=entry.steps or base.steps,
            temperature=entry.temperature,
            top_p=entry.top_p,
            builtin_rules=base.builtin_rules,
            config_rules=rules_from_config(entry.permission),
            disabled_tools=frozenset(tool for tool, on in entry.tools.items() if not on),
        )
    return agents


def listed_subagents(agents: Iterable[Agent], task_action: Callable[[str], str]) -> list[Agent]:
    """OpenCode's list in task's description: not primary, not denied to the caller by
    ``permission.task``, sorted by name."""
    shown = [a for a in agents if a.mode != "primary" and task_action(a.name) != "deny"]
    return sorted(shown, key=lambda a: (a.name.casefold(), a.name))


def describe_subagents(agents: Iterable[Agent]) -> str:
    lines = [f"- {a.name}: {a.description or NO_DESCRIPTION}" for a in agents]
    return "\n".join([LIST_HEADING, *lines])
