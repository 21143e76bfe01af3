"""Which OpenAI-compatible endpoint the sidecar runs a sub-agent on.

The model is, in order: the sub-agent's own ``model``; the caller's model when its
provider is configured with a ``baseURL``; the config's ``model``; else the first
model of the only provider with a ``baseURL``.  A model the config names (the
agent's or the top-level one) whose provider has no ``baseURL`` is an error, not a
silent switch to another model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.agents.catalog import Agent, model_ref
from tools.config.agents import ProviderConfig
from tools.config.effective import Config
from tools.model import ModelRef

DEFAULT_TIMEOUT_MS = 300_000  # OpenCode's default provider timeout


class EndpointError(Exception):
    """No usable endpoint; the message says what to configure."""


@dataclass(frozen=True)
class Endpoint:
    ref: ModelRef  # provider id / model key, as the config names it
    model: str  # what the endpoint is sent as "model"
    base_url: str
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"


def configured(config: Config) -> bool:
    """True when some provider has an endpoint: the sidecar can run sub-agents."""
    return any(p.base_url for p in config.providers.values())


def endpoint_for(config: Config, agent: Agent, caller: ModelRef | None) -> Endpoint:
    if agent.model is not None:
        return _endpoint(config, agent.model, f"the {agent.name} agent's model")
    if caller is not None and _provider(config, caller) is not None:
        return _endpoint(config, caller, "the caller's model")
    if config.model:
        ref = model_ref(config.model)
        assert ref is not None
        return _endpoint(config, ref, "the config's model")
    endpoints = [(pid, p) for pid, p in config.providers.items() if p.base_url]
    if len(endpoints) == 1 and endpoints[0][1].models:
        provider_id, provider = endpoints[0]
        return _endpoint(config, ModelRef(provider_id, next(iter(provider.models))), "")
    raise EndpointError(
        'no model is chosen for sub-agents: set `model` ("provider/model") in your config, '
        "or a `model` for the agent"
    )


def _provider(config: Config, ref: ModelRef) -> ProviderConfig | None:
    provider = config.providers.get(ref.provider_id)
    return provider if provider is not None and provider.base_url else None


def _endpoint(config: Config, ref: ModelRef, whose: str) -> Endpoint:
    provider = _provider(config, ref)
    if provider is None or provider.base_url is None:
        raise EndpointError(
            f"{whose} is {ref.provider_id}/{ref.model_id}, but provider.{ref.provider_id} has no "
            "options.baseURL in your user config, so the sidecar cannot reach it (it speaks "
            "the OpenAI chat-completions API)"
        )
    model = provider.models.get(ref.model_id)
    return Endpoint(
        ref=ref,
        model=model.id if model is not None else ref.model_id,
        base_url=provider.base_url,
        api_key=provider.resolved_key(),
        headers=provider.resolved_headers(),
        timeout_ms=provider.timeout_ms or DEFAULT_TIMEOUT_MS,
    )
