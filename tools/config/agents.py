"""OpenCode's ``agent``, ``provider``, ``model`` and ``subagent_depth`` config keys.

What the sub-agents of ``task`` are and which model endpoint the sidecar may run
them on, in OpenCode 1.18.33's format::

    {
      "model": "local/qwen3",
      "subagent_depth": 1,
      "agent": {
        "review": {"mode": "subagent", "description": "Reviews a diff",
                   "model": "local/qwen3", "prompt": "You review code.",
                   "permission": {"edit": "deny"}, "tools": {"bash": false}}
      },
      "provider": {
        "local": {"options": {"baseURL": "http://127.0.0.1:8080/v1",
                              "apiKey": "{env:LOCAL_KEY}"},
                  "models": {"qwen3": {"name": "Qwen 3"}}}
      }
    }

Each source's entries are read here into ``AgentConfig`` / ``ProviderConfig``;
``merge_agents`` / ``merge_providers`` stack the sources, later wins field by field
(``permission`` and ``tools`` key by key, as OpenCode's deep merge does).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tools.config.errors import ConfigError, KeyPath, show
from tools.config.rights import rights

AGENT_MODES = ("subagent", "primary", "all")

# OpenCode's agent config: these keys have a meaning; the rest are model options.
_AGENT_STRINGS = ("model", "prompt", "description", "variant", "color", "name")
_ENV_REFERENCE = re.compile(r"\{env:([^}]+)\}")


@dataclass(frozen=True)
class AgentConfig:
    """One ``agent.<name>`` entry (every field optional: it may refine a built-in)."""

    # Which agents may run it (primary, subagent, all), and on which endpoint.
    mode: str | None = field(default=None, metadata=rights("any_change"))
    description: str | None = field(default=None, metadata=rights("harmless"))
    model: str | None = field(default=None, metadata=rights("any_change"))  # "provider/model"
    prompt: str | None = field(default=None, metadata=rights("harmless"))
    # OpenCode's permission object for this agent, with its deprecated ``tools`` map
    # already folded in (``{"bash": false}`` -> ``{"bash": "deny"}``).
    permission: Mapping[str, Any] = field(default_factory=dict, metadata=rights("rules"))
    # As written, for hiding.
    tools: Mapping[str, bool] = field(default_factory=dict, metadata=rights("switched_on"))
    disable: bool = field(default=False, metadata=rights("off_widens"))
    hidden: bool | None = field(default=None, metadata=rights("harmless"))
    steps: int | None = field(default=None, metadata=rights("higher_widens", default=float("inf")))
    temperature: float | None = field(default=None, metadata=rights("harmless"))
    top_p: float | None = field(default=None, metadata=rights("harmless"))


@dataclass(frozen=True)
class ModelConfig:
    id: str  # what the endpoint is sent as "model"
    name: str | None = None


@dataclass(frozen=True)
class ProviderConfig:
    """One ``provider.<id>`` entry: an OpenAI-compatible endpoint and its models."""

    base_url: str | None = None
    api_key: str | None = None  # may be "{env:NAME}"
    env: tuple[str, ...] = ()  # environment variables that may hold the key
    headers: Mapping[str, str] = field(default_factory=dict)
    models: Mapping[str, ModelConfig] = field(default_factory=dict)
    timeout_ms: int | None = None

    def resolved_key(self) -> str | None:
        """The API key: ``apiKey`` with ``{env:NAME}`` filled in, else the first ``env`` set."""
        if self.api_key:
            key = _ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1).strip(), ""), self.api_key)
            return key or None
        for name in self.env:
            if os.environ.get(name):
                return os.environ[name]
        return None

    def resolved_headers(self) -> dict[str, str]:
        return {
            name: _ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1).strip(), ""), value)
            for name, value in self.headers.items()
        }


# -- reading one source ------------------------------------------------------------


def read_agents(raw: Any, errors: list[ConfigError]) -> dict[str, AgentConfig]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.append(
            ConfigError(f"expected an object of agent name to agent, got {show(raw)}", ("agent",))
        )
        return {}
    agents: dict[str, AgentConfig] = {}
    for name, entry in raw.items():
        agent = _read_agent(str(name), entry, errors)
        if agent is not None:
            agents[str(name)] = agent
    return agents


def _read_agent(name: str, entry: Any, errors: list[ConfigError]) -> AgentConfig | None:
    where: KeyPath = ("agent", name)
    if not isinstance(entry, Mapping):
        errors.append(ConfigError(f"expected an object, got {show(entry)}", where))
        return None
    before = len(errors)
    values: dict[str, Any] = {}
    for key in _AGENT_STRINGS:
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            errors.append(ConfigError(f"expected a string, got {show(value)}", (*where, key)))
        elif key in ("model", "prompt", "description"):
            values[key] = value
    model = values.get("model")
    if isinstance(model, str) and not _is_model_ref(model):
        errors.append(
            ConfigError(f'expected "provider/model", got {show(model)}', (*where, "model"))
        )
    mode = entry.get("mode")
    if mode is not None and mode not in AGENT_MODES:
        errors.append(
            ConfigError(
                f"expected one of {', '.join(AGENT_MODES)}, got {show(mode)}", (*where, "mode")
            )
        )
    for key in ("disable", "hidden"):
        value = entry.get(key)
        if value is not None and not isinstance(value, bool):
            errors.append(ConfigError(f"expected true or false, got {show(value)}", (*where, key)))
    steps = entry.get("steps", entry.get("maxSteps"))
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        errors.append(
            ConfigError(f"expected a positive integer, got {show(steps)}", (*where, "steps"))
        )
    numbers = {}
    for key in ("temperature", "top_p"):
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            errors.append(ConfigError(f"expected a number, got {show(value)}", (*where, key)))
        numbers[key] = value
    tools = entry.get("tools")
    if tools is not None and (
        not isinstance(tools, Mapping) or not all(isinstance(v, bool) for v in tools.values())
    ):
        errors.append(
            ConfigError(
                f"expected an object of tool name to true/false, got {show(tools)}",
                (*where, "tools"),
            )
        )
    permission = entry.get("permission")
    if permission is not None and not isinstance(permission, Mapping | str):
        errors.append(
            ConfigError(
                f"expected an action or an object, got {show(permission)}", (*where, "permission")
            )
        )
    if len(errors) > before:
        return None
    return AgentConfig(
        mode=mode,
        description=values.get("description"),
        model=model,
        prompt=values.get("prompt"),
        permission=fold_tools(tools or {}, permission),
        tools=dict(tools or {}),
        disable=entry.get("disable") is True,
        hidden=entry.get("hidden"),
        steps=steps,
        temperature=numbers["temperature"],
        top_p=numbers["top_p"],
    )


def fold_tools(
    tools: Mapping[str, bool], permission: Mapping[str, Any] | str | None
) -> dict[str, Any]:
    """OpenCode 1.18.33's reading of an agent's deprecated ``tools`` map: each entry
    becomes an allow or deny (write, edit and patch share ``edit``), then the agent's
    ``permission`` entries are laid over them."""
    folded: dict[str, Any] = {}
    for tool_id, on in tools.items():
        key = "edit" if tool_id in ("write", "edit", "patch") else tool_id
        folded[key] = "allow" if on else "deny"
    if isinstance(permission, str):
        folded.pop("*", None)
        folded["*"] = permission
    elif permission:
        folded.update(permission)  # an existing key keeps its place, as Object.assign does
    return folded


def read_providers(raw: Any, errors: list[ConfigError]) -> dict[str, ProviderConfig]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.append(
            ConfigError(
                f"expected an object of provider id to provider, got {show(raw)}", ("provider",)
            )
        )
        return {}
    providers: dict[str, ProviderConfig] = {}
    for provider_id, entry in raw.items():
        provider = _read_provider(str(provider_id), entry, errors)
        if provider is not None:
            providers[str(provider_id)] = provider
    return providers


def _read_provider(
    provider_id: str, entry: Any, errors: list[ConfigError]
) -> ProviderConfig | None:
    where: KeyPath = ("provider", provider_id)
    if not isinstance(entry, Mapping):
        errors.append(ConfigError(f"expected an object, got {show(entry)}", where))
        return None
    before = len(errors)
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        errors.append(ConfigError(f"expected an object, got {show(options)}", (*where, "options")))
        options = {}
    base_url = options.get("baseURL")
    if base_url is not None and (
        not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))
    ):
        errors.append(
            ConfigError(
                f"expected an http:// or https:// URL, got {show(base_url)}",
                (*where, "options", "baseURL"),
            )
        )
    api_key = options.get("apiKey")
    if api_key is not None and not isinstance(api_key, str):
        errors.append(
            ConfigError(
                f"expected a string (or {{env:NAME}}), got {show(api_key)}",
                (*where, "options", "apiKey"),
            )
        )
    headers = options.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        errors.append(
            ConfigError(
                f"expected an object of header to string, got {show(headers)}",
                (*where, "options", "headers"),
            )
        )
        headers = {}
    timeout = options.get("timeout")
    if (
        timeout is not None
        and timeout is not False
        and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1)
    ):
        errors.append(
            ConfigError(
                f"expected milliseconds (a positive integer) or false, got {show(timeout)}",
                (*where, "options", "timeout"),
            )
        )
    env = entry.get("env") or []
    if not isinstance(env, list) or not all(isinstance(name, str) for name in env):
        errors.append(
            ConfigError(f"expected a list of variable names, got {show(env)}", (*where, "env"))
        )
        env = []
    models = _read_models(entry.get("models"), where, errors)
    if len(errors) > before:
        return None
    return ProviderConfig(
        base_url=base_url.rstrip("/") if isinstance(base_url, str) else None,
        api_key=api_key,
        env=tuple(env),
        headers=dict(headers),
        models=models,
        timeout_ms=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None,
    )


def _read_models(raw: Any, where: KeyPath, errors: list[ConfigError]) -> dict[str, ModelConfig]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        errors.append(
            ConfigError(
                f"expected an object of model id to model, got {show(raw)}", (*where, "models")
            )
        )
        return {}
    models: dict[str, ModelConfig] = {}
    for key, entry in raw.items():
        entry = entry if entry is not None else {}
        if not isinstance(entry, Mapping):
            errors.append(
                ConfigError(f"expected an object, got {show(entry)}", (*where, "models", key))
            )
            continue
        model_id, name = entry.get("id", key), entry.get("name")
        if not isinstance(model_id, str) or not (name is None or isinstance(name, str)):
            errors.append(ConfigError("id and name must be strings", (*where, "models", key)))
            continue
        models[str(key)] = ModelConfig(model_id, name)
    return models


def read_model(raw: Any, errors: list[ConfigError]) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not _is_model_ref(raw):
        errors.append(ConfigError(f'expected "provider/model", got {show(raw)}', ("model",)))
        return None
    return raw


def read_depth(raw: Any, errors: list[ConfigError]) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        errors.append(
            ConfigError(
                f"expected a whole number of levels (0 or more), got {show(raw)}",
                ("subagent_depth",),
            )
        )
        return None
    return raw


def read_experimental(raw: Any, errors: list[ConfigError]) -> tuple[list[str] | None, bool | None]:
    """``experimental.primary_tools`` and ``experimental.continue_loop_on_deny``."""
    if not isinstance(raw, Mapping):
        return None, None  # other experimental keys are OpenCode's business
    tools = raw.get("primary_tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)
    ):
        errors.append(
            ConfigError(
                f"expected a list of tool ids, got {show(tools)}", ("experimental", "primary_tools")
            )
        )
        tools = None
    go_on = raw.get("continue_loop_on_deny")
    if go_on is not None and not isinstance(go_on, bool):
        errors.append(
            ConfigError(
                f"expected true or false, got {show(go_on)}",
                ("experimental", "continue_loop_on_deny"),
            )
        )
        go_on = None
    return tools, go_on


def _is_model_ref(value: str) -> bool:
    provider, sep, model = value.partition("/")
    return bool(sep and provider and model)


# -- stacking sources ----------------------------------------------------------------


def merge_agents(
    base: Mapping[str, AgentConfig], later: Mapping[str, AgentConfig]
) -> dict[str, AgentConfig]:
    merged = dict(base)
    for name, agent in later.items():
        earlier = merged.get(name)
        merged[name] = agent if earlier is None else _merge_agent(earlier, agent)
    return merged


def _merge_agent(earlier: AgentConfig, later: AgentConfig) -> AgentConfig:
    permission = dict(earlier.permission)
    for key, value in later.permission.items():
        if isinstance(value, Mapping) and isinstance(permission.get(key), Mapping):
            value = {**permission[key], **value}
        permission.pop(key, None)  # re-inserted last: the later source's rule wins
        permission[key] = value
    return AgentConfig(
        mode=later.mode or earlier.mode,
        description=later.description if later.description is not None else earlier.description,
        model=later.model or earlier.model,
        prompt=later.prompt if later.prompt is not None else earlier.prompt,
        permission=permission,
        tools={**earlier.tools, **later.tools},
        disable=later.disable or earlier.disable,
        hidden=later.hidden if later.hidden is not None else earlier.hidden,
        steps=later.steps or earlier.steps,
        temperature=later.temperature if later.temperature is not None else earlier.temperature,
        top_p=later.top_p if later.top_p is not None else earlier.top_p,
    )


def merge_providers(
    base: Mapping[str, ProviderConfig], later: Mapping[str, ProviderConfig]
) -> dict[str, ProviderConfig]:
    merged = dict(base)
    for provider_id, provider in later.items():
        earlier = merged.get(provider_id)
        if earlier is None:
            merged[provider_id] = provider
            continue
        merged[provider_id] = replace(
            earlier,
            base_url=provider.base_url or earlier.base_url,
            api_key=provider.api_key or earlier.api_key,
            env=provider.env or earlier.env,
            headers={**earlier.headers, **provider.headers},
            models={**earlier.models, **provider.models},
            timeout_ms=provider.timeout_ms or earlier.timeout_ms,
        )
    return merged
