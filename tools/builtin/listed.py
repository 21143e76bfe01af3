"""Whether the built-ins offered only sometimes (``task``, ``websearch``) are listed,
decided without importing them: a listing (``toolhost list``, ``tools/list``) then
imports neither the sub-agent machinery nor the web search client, only what it asks.

The catalogue (``tools.builtin.lazy``) asks these for a tool marked ``conditional``; the
tool's own ``available`` is the same function (tests/test_catalog.py holds them so).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from tools.agents import endpoints

if TYPE_CHECKING:
    from tools.context import Host

Provider = Literal["exa", "parallel"]


def task(host: Host, capabilities: frozenset[str]) -> bool:
    """Where a sub-agent runner exists (``tools.agents.runner.choose``): the editor runs
    sub-agents, or a model endpoint is configured for the sidecar."""
    return "task" in capabilities or endpoints.configured(host.config)


def websearch(host: Host, capabilities: frozenset[str]) -> bool:
    """Where a search provider is switched on (1.18.33's switches)."""
    return provider_from_env() is not None


def provider_from_env(environ: Mapping[str, str] | None = None) -> Provider | None:
    """The provider 1.18.33's switches name: ``OPENCODE_WEBSEARCH_PROVIDER``, else
    Parallel when enabled, else Exa when enabled; None when neither is."""
    env = os.environ if environ is None else environ
    named = env.get("OPENCODE_WEBSEARCH_PROVIDER")
    if named == "exa":
        return "exa"
    if named == "parallel":
        return "parallel"
    if _flag(env, "OPENCODE_ENABLE_PARALLEL", "OPENCODE_EXPERIMENTAL_PARALLEL"):
        return "parallel"
    if _flag(env, "OPENCODE_ENABLE_EXA", "OPENCODE_EXPERIMENTAL_EXA", "OPENCODE_EXPERIMENTAL"):
        return "exa"
    return None


def _flag(environ: Mapping[str, str], *names: str) -> bool:
    return any(environ.get(name, "").strip().lower() in ("1", "true") for name in names)
