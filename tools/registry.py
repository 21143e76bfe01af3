"""Which tools exist, in which order, and which ones a given caller is offered."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from tools.builtin import BUILTIN_ORDER
from tools.config.effective import Config
from tools.model import ModelRef
from tools.tool import Tool

EDIT_FAMILY = ("edit", "write", "multiedit")


def uses_apply_patch(model: ModelRef | None) -> bool:
    """GPT models (but not gpt-4 or the open-weight ones) are given apply_patch."""
    if model is None:
        return False
    model_id = model.model_id.lower()
    return "gpt-" in model_id and "gpt-4" not in model_id and "oss" not in model_id


class Registry:
    def __init__(
        self,
        builtins: Iterable[Tool],
        invalid: Callable[[], Tool],
        custom: Iterable[Tool] = (),
    ):
        """``invalid``: loads the tool that answers a call of an unknown tool (on first
        such call: most sessions never make one)."""
        rank = {tool_id: i for i, tool_id in enumerate(BUILTIN_ORDER)}
        ordered = sorted(builtins, key=lambda t: (rank.get(t.id, len(rank)), t.id))
        custom_tools = sorted(custom, key=lambda t: t.id)
        replaced = {t.id for t in custom_tools}
        self.builtins: list[Tool] = ordered
        self.custom: list[Tool] = custom_tools
        # Built-in ids a custom tool replaces (``toolhost list`` says so).
        self.overridden: frozenset[str] = frozenset(t.id for t in ordered if t.id in replaced)
        self.tools: list[Tool] = [t for t in ordered if t.id not in replaced] + custom_tools
        self._load_invalid = invalid
        self._by_id = {t.id: t for t in self.tools}

    def with_custom(self, custom: Iterable[Tool]) -> Registry:
        """The same built-ins with ``custom`` as the custom tools."""
        return Registry(self.builtins, self._load_invalid, custom)

    @functools.cached_property
    def invalid(self) -> Tool:
        return self._load_invalid()

    def is_custom(self, tool_id: str) -> bool:
        return any(t.id == tool_id for t in self.custom)

    def get(self, tool_id: str) -> Tool | None:
        """The tool for an id; a case-only mismatch (``Read``) finds the real tool."""
        return self._by_id.get(tool_id) or self._by_id.get(tool_id.lower())

    def offered(
        self,
        *,
        model: ModelRef | None,
        config: Config,
        capabilities: frozenset[str],
    ) -> list[Tool]:
        """The catalogue a model sees, filtered for the model, the config and the client."""
        patch = uses_apply_patch(model)
        hidden = set(EDIT_FAMILY) if patch else {"apply_patch"}
        return [
            tool
            for tool in self.tools
            if tool.id not in hidden
            and config.is_enabled(tool.id)
            and tool.requires <= capabilities
        ]
