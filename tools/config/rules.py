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
from typing import Any

from tools.permission import Rule, Ruleset, expand_home, rules_from_config, wildcard_match
from tools.truncation import MAX_BYTES, MAX_LINES

KeyPath = tuple[str | int, ...]

ACTIONS = ("allow", "ask", "deny")

# Permissions of the tools that change files (edit covers write, multiedit and
# apply_patch), run commands, fetch, or start sub-agents that could do any of those.
FAIL_CLOSED_PERMISSIONS = ("edit", "bash", "webfetch", "websearch", "codesearch", "task")

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
            "fixed, edits, commands and web fetches will ask first."
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
    # The YAML registry's bash lists and directories, in source order (the bash
    # tool checks every command a line could run against these).
    allowed_commands: tuple[str, ...] = ()
    denied_commands: tuple[str, ...] = ()
    allowed_dirs: tuple[str, ...] = ()
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

    def effective_rules(self, base: Ruleset) -> Ruleset:
        """``base`` (built-in and agent rules) followed by this config's rules.

        When failing closed, the stricter tail is computed over ``base`` too, so an
        agent's own deny (the plan agent's edits) is not weakened to an ask.
        """
        if not self.problems:
            return [*base, *self.rules]
        combined = [*base, *self.source_rules]
        return [*combined, *fail_closed_rules(combined)]


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
    # The sandbox keys this source sets (mode, network, writable, caches, hidden).
    sandbox: dict[str, Any] = field(default_factory=dict)


def fail_closed_rules(rules: Sequence[Rule]) -> Ruleset:
    """Rules that, appended to ``rules``, turn each fail-closed permission's allow into ask.

    For each such permission: a catch-all ask, then every earlier rule that applies
    to it, narrowed to that permission, with allow turned into ask.  Evaluation then
    gives deny where ``rules`` gave deny and ask everywhere else for these
    permissions, while every other permission is untouched.
    """
    tail: Ruleset = []
    for permission in FAIL_CLOSED_PERMISSIONS:
        tail.append(Rule(permission, "*", "ask"))
        for rule in rules:
            if wildcard_match(permission, rule.permission):
                action = "ask" if rule.action == "allow" else rule.action
                tail.append(Rule(permission, rule.pattern, action))
    return tail


def merge(layers: Iterable[ConfigLayer], problems: Sequence[ConfigProblem] = ()) -> Config:
    """Stack the usable layers, later wins; with any problem, fail closed."""
    enabled: dict[str, bool] = {}
    rules: Ruleset = []
    limits = ToolOutputLimits()
    allowed: list[str] = []
    denied: list[str] = []
    dirs: list[str] = []
    sandbox = SandboxSettings()
    for layer in layers:
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
    effective = [*rules, *fail_closed_rules(rules)] if problems else list(rules)
    return Config(
        enabled=enabled,
        rules=effective,
        tool_output=limits,
        problems=tuple(problems),
        source_rules=rules,
        allowed_commands=tuple(allowed),
        denied_commands=tuple(denied),
        allowed_dirs=tuple(dirs),
        sandbox=sandbox,
    )


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
    others are ignored.

    Every mistake is returned (not just the first), each naming its key.
    """
    if data is None:
        return ConfigLayer(), []
    if not isinstance(data, Mapping):
        return ConfigLayer(), [ConfigError(f"the config must be an object, got {show(data)}")]
    errors: list[ConfigError] = []
    layer = ConfigLayer(enabled=_read_tools(data.get("tools"), errors))
    permission = data.get("permission")
    if _check_permission(permission, errors):
        layer.rules = rules_from_config(permission)
    layer.max_lines, layer.max_bytes = _read_tool_output(data.get("tool_output"), errors)
    layer.sandbox = read_sandbox(data.get("sandbox"), ("sandbox",), errors)
    return layer, errors


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
    limits: list[int | None] = []
    for key in ("max_lines", "max_bytes"):
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
