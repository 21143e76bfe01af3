"""OpenCode's JSON config keys, read into a ``ConfigLayer``: ``tools``, ``permission``,
``tool_output``, the agent keys and ``sandbox`` (ours); every mistake is returned, each
naming its key. Reading the files lives in ``tools.config.files``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from tools.config import agents
from tools.config.effective import (
    CHECKPOINT_KEYS,
    SANDBOX_LISTS,
    SANDBOX_MODES,
    SANDBOX_NETWORKS,
    Config,
    ConfigLayer,
)
from tools.config.errors import ConfigError, KeyPath, show
from tools.config.merge import merge
from tools.config.network import read_network
from tools.permission.rules import expand_home, rules_from_config

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
        "checkpoints",  # ours: how long undo keeps turns (docs/undo.md)
    }
)
TOOL_OUTPUT_KEYS = ("max_lines", "max_bytes")


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
    layer.checkpoints = _read_checkpoints(data.get("checkpoints"), errors)
    return layer, errors


def _read_checkpoints(value: Any, errors: list[ConfigError]) -> dict[str, Any]:
    """``checkpoints``: ``{maxAgeDays, maxBytes, outside, idleSeconds}``, each checked."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(ConfigError(f"expected an object, got {show(value)}", ("checkpoints",)))
        return {}
    found: dict[str, Any] = {}
    for key, item in value.items():
        field_name = CHECKPOINT_KEYS.get(str(key))
        if field_name is None:
            errors.append(_unknown_key(key, CHECKPOINT_KEYS, ("checkpoints",)))
        elif key == "outside":
            if isinstance(item, bool):
                found[field_name] = item
            else:
                errors.append(
                    ConfigError(f"expected true or false, got {show(item)}", ("checkpoints", key))
                )
        elif isinstance(item, int | float) and not isinstance(item, bool) and item > 0:
            found[field_name] = int(item) if key == "maxBytes" else float(item)
        else:
            errors.append(
                ConfigError(f"expected a positive number, got {show(item)}", ("checkpoints", key))
            )
    return found


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
                "expected an object with mode, network, writable, caches, hidden or "
                f"repositories, got {show(value)}",
                where,
            )
        )
        return {}
    found: dict[str, Any] = {}
    choices = {"mode": SANDBOX_MODES, "network": SANDBOX_NETWORKS}
    for key, item in value.items():
        at: KeyPath = (*where, key)
        if key == "network" and item not in SANDBOX_NETWORKS:
            lists = read_network(item, at, errors)
            if lists is not None:
                found[key] = lists
        elif key in choices:
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
