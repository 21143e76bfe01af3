"""The effective configuration: which tools exist, what they may do, output limits.

This is the one shape every config source normalises into.  Each source (a config
file, ``initializationOptions.config``) becomes a ``ConfigLayer``; ``merge`` stacks
the layers, later wins, and fails closed when a source could not be used.  Reading
files lives in ``tools.config.files``; this module knows OpenCode's JSON keys.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.permission import Rule, Ruleset, expand_home, rules_from_config, wildcard_match
from tools.truncation import MAX_BYTES, MAX_LINES

if TYPE_CHECKING:
    from tools.config.agents import AgentConfig, ProviderConfig
    from tools.config.salvage import Salvage

KeyPath = tuple[str | int, ...]

ACTIONS = ("allow", "ask", "deny")

# OpenCode 1.18.33's top-level config keys (its Config schema), plus the TUI keys older
# versions read there.  Any other key is a mistake that could hide a rule (``permissions``).
KNOWN_KEYS = frozenset(
    {
        *("$schema", "shell", "logLevel", "server", "command", "skills", "references"),
        *("reference", "watcher", "snapshot", "plugin", "share", "autoshare", "autoupdate"),
        *("disabled_providers", "enabled_providers", "model", "small_model", "default_agent"),
        *("subagent_depth", "username", "mode", "agent", "provider", "mcp", "formatter", "lsp"),
        *("instructions", "layout", "permission", "tools", "attachment", "enterprise"),
        *("tool_output", "compaction", "experimental", "theme", "keybinds", "tui"),
        "sandbox",  # ours: the bash sandbox's settings
    }
)
TOOL_OUTPUT_KEYS = ("max_lines", "max_bytes")

# What an untrusted folder still runs without asking (when the rules allow it): the
# tools that only read, or only keep the session's own notes.  Everything else asks.
READ_ONLY_PERMISSIONS = (
    *("read", "glob", "grep", "list", "lsp", "skill", "todoread", "todowrite", "question"),
)

INIT_OPTIONS_SOURCE = "initializationOptions.config"

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def format_key(path: KeyPath) -> str:
    """``("permission", "bash", "rm *")`` -> ``permission.bash["rm *"]``."""
    parts: list[str] = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            parts.append(f".{part}" if parts else part)
        else:
            parts.append(f"[{json.dumps(part)}]")
    return "".join(parts)


def show(value: Any) -> str:
    """A config value as a user wrote it (JSON spelling: ``"yes"``, ``true``, ``null``)."""
    return json.dumps(value, default=str)


class ConfigError(ValueError):
    """A config value is wrong; ``path`` is the key, and the message names it."""

    def __init__(self, message: str, path: KeyPath = ()) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{format_key(path)}: {message}" if path else message)

    @property
    def key(self) -> str | None:
        return format_key(self.path) if self.path else None


@dataclass(frozen=True)
class ConfigProblem:
    """A config source that could not be used, and where it went wrong."""

    file: Path | None  # None: initializationOptions.config
    line: int | None
    key: str | None
    message: str
    column: int | None = None

    @property
    def source(self) -> str:
        return str(self.file) if self.file is not None else INIT_OPTIONS_SOURCE

    def __str__(self) -> str:
        """Compiler style, for the log and ``toolhost list``: ``file:line:col: key: message``."""
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def sentence(self) -> str:
        """One sentence for a person (``window/showMessage``)."""
        position = ""
        if self.line is not None:
            position = f"line {self.line}"
            if self.column is not None:
                position += f", column {self.column}"
            position += ": "
        detail = f"{self.key}: {self.message}" if self.key else self.message
        return (
            f"toolhost: could not use {self.source} ({position}{detail}). Until it is "
            "fixed, every tool asks first, and every denial it and the other config files "
            "state still applies."
        )


@dataclass(frozen=True)
class ToolOutputLimits:
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES


SANDBOX_MODES = ("auto", "required", "off")
SANDBOX_NETWORKS = ("allow", "deny")
SANDBOX_LISTS = ("writable", "caches", "hidden")


@dataclass(frozen=True)
class SandboxSettings:
    """``sandbox`` in opencode.json, or the bash entry's ``sandbox`` in tools.yaml.

    ``caches`` and ``hidden`` None: the built-in lists (tools.bash.sandbox.settings).
    """

    mode: str = "auto"  # auto | required | off
    network: str = "allow"  # allow | deny
    writable: tuple[str, ...] = ()  # more directories commands may write
    caches: tuple[str, ...] | None = None  # package caches commands may write
    hidden: tuple[str, ...] | None = None  # paths covered from commands (sockets)


@dataclass(frozen=True)
class Config:
    # tool id (or wildcard) -> on/off; the last matching key decides
    enabled: Mapping[str, bool] = field(default_factory=dict)
    # Appended after the built-in and agent rules; includes the fail-closed rules.
    rules: Ruleset = field(default_factory=list)
    tool_output: ToolOutputLimits = ToolOutputLimits()
    # Sources that could not be used; when any, the config fails closed.
    problems: tuple[ConfigProblem, ...] = ()
    # The sources' own rules, before the fail-closed rules were added.
    source_rules: Ruleset = field(default_factory=list)
    # The denials read from sources that could not be used (``tools.config.salvage``).
    salvaged: Ruleset = field(default_factory=list)
    # The folder is not trusted (``tools.trust``): all but the read-only tools ask.
    untrusted: bool = False
    # The YAML registry's bash lists and directories, in source order (the bash
    # tool checks every command a line could run against these).
    allowed_commands: tuple[str, ...] = ()
    denied_commands: tuple[str, ...] = ()
    allowed_dirs: tuple[str, ...] = ()
    # Sub-agents and model endpoints (``tools.config.agents``).
    agents: Mapping[str, AgentConfig] = field(default_factory=dict)
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    model: str | None = None  # "provider/model"
    subagent_depth: int | None = None
    primary_tools: tuple[str, ...] = ()
    continue_loop_on_deny: bool = False
    sandbox: SandboxSettings = SandboxSettings()

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
    # The sandbox keys this source sets (mode, network, writable, caches, hidden).
    sandbox: dict[str, Any] = field(default_factory=dict)


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


def merge(
    layers: Iterable[ConfigLayer],
    problems: Sequence[ConfigProblem] = (),
    salvage: Salvage | None = None,
    *,
    untrusted: bool = False,
) -> Config:
    """Stack the usable layers, later wins; with any problem, fail closed.

    ``salvage``: what the unusable sources still forbid (their denials, tools they
    switch off); it applies on top of everything while failing closed.
    """
    from tools.config.agents import merge_agents, merge_providers

    enabled: dict[str, bool] = {}
    rules: Ruleset = []
    limits = ToolOutputLimits()
    allowed: list[str] = []
    denied: list[str] = []
    dirs: list[str] = []
    agents: dict[str, AgentConfig] = {}
    providers: dict[str, ProviderConfig] = {}
    model = depth = primary_tools = go_on = None
    sandbox = SandboxSettings()
    for layer in layers:
        agents = merge_agents(agents, layer.agents)
        providers = merge_providers(providers, layer.providers)
        model = layer.model or model
        depth = layer.subagent_depth if layer.subagent_depth is not None else depth
        primary_tools = layer.primary_tools if layer.primary_tools is not None else primary_tools
        go_on = layer.continue_loop_on_deny if layer.continue_loop_on_deny is not None else go_on
        for tool_id, on in layer.enabled.items():
            enabled.pop(tool_id, None)  # re-insert so the later source's key is last
            enabled[tool_id] = on
        rules.extend(layer.rules)
        if layer.max_lines is not None:
            limits = ToolOutputLimits(layer.max_lines, limits.max_bytes)
        if layer.max_bytes is not None:
            limits = ToolOutputLimits(limits.max_lines, layer.max_bytes)
        allowed.extend(layer.allowed_commands)
        denied.extend(layer.denied_commands)
        dirs.extend(layer.allowed_dirs)
        sandbox = _merge_sandbox(sandbox, layer.sandbox)
    salvaged: Ruleset = []
    if problems and salvage is not None:
        salvaged = list(salvage.denies)
        for tool_id in salvage.off:
            enabled.pop(tool_id, None)
            enabled[tool_id] = False
    config = Config(
        enabled=enabled,
        tool_output=limits,
        problems=tuple(problems),
        source_rules=rules,
        salvaged=salvaged,
        untrusted=untrusted,
        allowed_commands=tuple(allowed),
        denied_commands=tuple(denied),
        allowed_dirs=tuple(dirs),
        agents=agents,
        providers=providers,
        model=model,
        subagent_depth=depth,
        primary_tools=tuple(primary_tools or ()),
        continue_loop_on_deny=bool(go_on),
        sandbox=sandbox,
    )
    return replace(config, rules=[*rules, *config.tail(rules)])


def _merge_sandbox(settings: SandboxSettings, keys: Mapping[str, Any]) -> SandboxSettings:
    """A later source's keys win, except ``writable``, which adds to the earlier ones."""
    changes: dict[str, Any] = {k: v for k, v in keys.items() if k in ("mode", "network")}
    if "writable" in keys:
        changes["writable"] = (*settings.writable, *keys["writable"])
    for key in ("caches", "hidden"):
        if key in keys:
            changes[key] = tuple(keys[key])
    return replace(settings, **changes)


# -- OpenCode's JSON format --------------------------------------------------------


def read_opencode(data: Any) -> tuple[ConfigLayer, list[ConfigError]]:
    """OpenCode's ``tools`` / ``permission`` / ``tool_output`` keys, and ``sandbox`` (ours);
    OpenCode's other keys are ignored, and a key neither knows is an error (a misspelt
    ``permissions`` would otherwise drop its rules without a word).

    Every mistake is returned (not just the first), each naming its key.
    """
    if data is None:
        return ConfigLayer(), []
    if not isinstance(data, Mapping):
        return ConfigLayer(), [ConfigError(f"the config must be an object, got {show(data)}")]
    errors: list[ConfigError] = [
        _unknown_key(key) for key in data if not isinstance(key, str) or key not in KNOWN_KEYS
    ]
    layer = ConfigLayer(enabled=_read_tools(data.get("tools"), errors))
    permission = data.get("permission")
    if _check_permission(permission, errors):
        layer.rules = rules_from_config(permission)
    layer.max_lines, layer.max_bytes = _read_tool_output(data.get("tool_output"), errors)
    _read_agent_keys(data, layer, errors)
    layer.sandbox = read_sandbox(data.get("sandbox"), ("sandbox",), errors)
    return layer, errors


def _unknown_key(key: Any, known: Iterable[str] = KNOWN_KEYS, where: KeyPath = ()) -> ConfigError:
    """A key OpenCode does not read, with the one it probably meant."""
    import difflib  # only for a misspelt key: difflib stays out of a cold start

    close = difflib.get_close_matches(str(key), sorted(known), 1, 0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown key{hint} (a misspelt key would be ignored)", (*where, str(key)))


def _read_agent_keys(
    data: Mapping[str, Any], layer: ConfigLayer, errors: list[ConfigError]
) -> None:
    """``agent``, ``provider``, ``model``, ``subagent_depth`` (``tools.config.agents``)."""
    from tools.config import agents

    layer.agents = agents.read_agents(data.get("agent"), errors)
    layer.providers = agents.read_providers(data.get("provider"), errors)
    layer.model = agents.read_model(data.get("model"), errors)
    layer.subagent_depth = agents.read_depth(data.get("subagent_depth"), errors)
    layer.primary_tools, layer.continue_loop_on_deny = agents.read_experimental(
        data.get("experimental"), errors
    )


def _read_tools(tools: Any, errors: list[ConfigError]) -> dict[str, bool]:
    if tools is None:
        return {}
    if not isinstance(tools, Mapping):
        errors.append(
            ConfigError(
                f"expected an object of tool name to true/false, got {show(tools)}", ("tools",)
            )
        )
        return {}
    enabled: dict[str, bool] = {}
    for tool_id, on in tools.items():
        if isinstance(on, bool):
            enabled[tool_id] = on
        else:
            errors.append(
                ConfigError(f"expected true or false, got {show(on)}", ("tools", tool_id))
            )
    return enabled


def _check_permission(permission: Any, errors: list[ConfigError]) -> bool:
    """True when ``permission`` has OpenCode's shape (so ``rules_from_config`` accepts it)."""
    before = len(errors)
    if permission is None:
        return True
    if isinstance(permission, str):
        _check_action(permission, ("permission",), errors)
    elif not isinstance(permission, Mapping):
        errors.append(
            ConfigError(
                f"expected an action ({', '.join(ACTIONS)}) or an object, got {show(permission)}",
                ("permission",),
            )
        )
    else:
        for perm, value in permission.items():
            where: KeyPath = ("permission", perm)
            if isinstance(value, Mapping):
                for pattern, action in value.items():
                    _check_action(action, (*where, pattern), errors)
            elif isinstance(value, str):
                _check_action(value, where, errors)
            else:
                errors.append(
                    ConfigError(
                        f"expected an action ({', '.join(ACTIONS)}) or an object of pattern "
                        f"to action, got {show(value)}",
                        where,
                    )
                )
    return len(errors) == before


def _check_action(value: Any, where: KeyPath, errors: list[ConfigError]) -> None:
    if value not in ACTIONS:
        errors.append(
            ConfigError(f"expected one of {', '.join(ACTIONS)}, got {show(value)}", where)
        )


def _read_tool_output(output: Any, errors: list[ConfigError]) -> tuple[int | None, int | None]:
    if output is None:
        return None, None
    if not isinstance(output, Mapping):
        errors.append(
            ConfigError(
                f"expected an object with max_lines and max_bytes, got {show(output)}",
                ("tool_output",),
            )
        )
        return None, None
    errors += [
        _unknown_key(key, TOOL_OUTPUT_KEYS, ("tool_output",))
        for key in output
        if key not in TOOL_OUTPUT_KEYS
    ]
    limits: list[int | None] = []
    for key in TOOL_OUTPUT_KEYS:
        value = output.get(key)
        if value is None:
            limits.append(None)
        elif isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            limits.append(value)
        else:
            errors.append(
                ConfigError(f"expected a positive integer, got {show(value)}", ("tool_output", key))
            )
            limits.append(None)
    return limits[0], limits[1]


def read_sandbox(value: Any, where: KeyPath, errors: list[ConfigError]) -> dict[str, Any]:
    """The ``sandbox`` object: the keys it sets, each checked (a typo is an error, since
    it would silently drop a protection)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(
            ConfigError(
                f"expected an object with mode, network, writable, caches or hidden, "
                f"got {show(value)}",
                where,
            )
        )
        return {}
    found: dict[str, Any] = {}
    choices = {"mode": SANDBOX_MODES, "network": SANDBOX_NETWORKS}
    for key, item in value.items():
        at: KeyPath = (*where, key)
        if key in choices:
            if item in choices[key]:
                found[key] = item
            else:
                errors.append(
                    ConfigError(f"expected one of {', '.join(choices[key])}, got {show(item)}", at)
                )
        elif key in SANDBOX_LISTS:
            paths = _sandbox_paths(item, at, errors)
            if paths is not None:
                found[key] = paths
        else:
            known = ", ".join([*choices, *SANDBOX_LISTS])
            errors.append(ConfigError(f"unknown key (expected one of {known})", at))
    return found


def _sandbox_paths(value: Any, where: KeyPath, errors: list[ConfigError]) -> list[str] | None:
    if not isinstance(value, list):
        errors.append(ConfigError(f"expected a list of paths, got {show(value)}", where))
        return None
    paths: list[str] = []
    for index, item in enumerate(value):
        path = expand_home(item.strip()) if isinstance(item, str) else None
        if path is None or not os.path.isabs(path):
            errors.append(
                ConfigError(
                    "expected an absolute path (or one starting with ~ or $HOME), "
                    f"got {show(item)}",
                    (*where, index),
                )
            )
            continue
        paths.append(os.path.normpath(path))
    return paths


def config_from_opencode(data: Mapping[str, Any] | None) -> Config:
    """One OpenCode-format object as the whole config; raises ``ConfigError`` on a mistake."""
    layer, errors = read_opencode(data or None)
    if errors:
        raise errors[0]
    return merge([layer])
