"""Stacking the sources' layers into one ``Config``: later wins, and with any source that
could not be used, the config fails closed (keeping what the broken sources forbid)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tools.config.agents import AgentConfig, ProviderConfig, merge_agents, merge_providers
from tools.config.effective import (
    CheckpointSettings,
    Config,
    ConfigLayer,
    SandboxSettings,
    ToolOutputLimits,
)
from tools.config.errors import ConfigProblem
from tools.permission.rules import Ruleset

if TYPE_CHECKING:
    from tools.config.salvage import Salvage


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
    checkpoints = CheckpointSettings()
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
        checkpoints = replace(checkpoints, **layer.checkpoints)
    if problems:
        # A source that cannot be read may have said less about the network than the
        # others: until it is fixed, commands get none (README, "Failing closed").
        sandbox = replace(sandbox, network="deny")
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
        checkpoints=checkpoints,
    )
    return replace(config, rules=[*rules, *config.tail(rules)])


def _merge_sandbox(settings: SandboxSettings, keys: Mapping[str, Any]) -> SandboxSettings:
    """A later source's keys win, except ``writable`` and ``repositories``, which add to
    the earlier ones."""
    changes: dict[str, Any] = {k: v for k, v in keys.items() if k in ("mode", "network")}
    for key in ("writable", "repositories"):
        if key in keys:
            changes[key] = (*getattr(settings, key), *keys[key])
    for key in ("caches", "hidden"):
        if key in keys:
            changes[key] = tuple(keys[key])
    return replace(settings, **changes)
