"""The effective configuration: which tools exist, what they may do, output limits.

This is the one shape every config source normalises into.  Today the source is
``initializationOptions.config`` in OpenCode's JSON format; config files add more
sources without changing this shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.permission import Ruleset, rules_from_config
from tools.truncation import MAX_BYTES, MAX_LINES


class ConfigError(ValueError):
    """A config value is wrong; the message names the key."""


@dataclass(frozen=True)
class ToolOutputLimits:
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES


@dataclass(frozen=True)
class Config:
    enabled: Mapping[str, bool] = field(default_factory=dict)  # tool id -> on/off
    rules: Ruleset = field(default_factory=list)
    tool_output: ToolOutputLimits = ToolOutputLimits()

    def is_enabled(self, tool_id: str) -> bool:
        return self.enabled.get(tool_id, True)


def config_from_opencode(data: Mapping[str, Any] | None) -> Config:
    """Read OpenCode's ``tools`` / ``permission`` / ``tool_output`` keys."""
    if not data:
        return Config()
    if not isinstance(data, Mapping):
        raise ConfigError("config must be an object")
    enabled: dict[str, bool] = {}
    for tool_id, on in (data.get("tools") or {}).items():
        if not isinstance(on, bool):
            raise ConfigError(f"tools.{tool_id} must be true or false (got {on!r})")
        enabled[tool_id] = on
    try:
        rules = rules_from_config(data.get("permission"))
    except ValueError as error:
        raise ConfigError(str(error)) from error
    output = data.get("tool_output") or {}
    limits = ToolOutputLimits(
        max_lines=_positive_int(output, "max_lines", MAX_LINES),
        max_bytes=_positive_int(output, "max_bytes", MAX_BYTES),
    )
    return Config(enabled=enabled, rules=rules, tool_output=limits)


def _positive_int(section: Mapping[str, Any], key: str, default: int) -> int:
    value = section.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"tool_output.{key} must be a positive integer (got {value!r})")
    return value
