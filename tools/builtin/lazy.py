"""The built-ins as the catalogue lists them: described from ``catalog.json``, each module
imported only when its tool first runs (or, for one that completes its description per
worktree, when it is listed)."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.tool import Annotations, NoArgs, Tool

if TYPE_CHECKING:
    from tools.context import Host, ToolContext
    from tools.result import ToolResult
    from tools.tool import Available, Caller

from tools.builtin import BUILTIN_ORDER

# What ``tools/list`` shows of each built-in, written by scripts/gen_catalog.py from the
# modules themselves (tests/test_catalog.py fails when it is stale). It lets a sidecar
# list its tools, and run one, without importing the other thirteen (and httpx,
# tree-sitter, PyYAML behind them): ~80 ms of a cold start.
CATALOG = Path(__file__).with_name("catalog.json")


def builtin_tools() -> list[Tool]:
    """Every built-in, in ``BUILTIN_ORDER``; each module is imported on first use."""
    entries = _catalog()
    return [_lazy(name, entries[name]) for name in BUILTIN_ORDER]


def loaded_builtin(tool_id: str) -> Tool:
    """The built-in's own ``Tool``, from its module (imported now if need be)."""
    name = f"tools.builtin.{tool_id}"
    # sys.modules first: this runs for every call, and import_module takes the import lock.
    module = sys.modules.get(name) or importlib.import_module(name)
    tool: Tool = module.tool
    return tool


def invalid_tool() -> Tool:
    from tools.builtin.invalid import tool

    return tool


@cache
def _catalog() -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = json.loads(CATALOG.read_text(encoding="utf-8"))
    return entries


def catalog_entry(tool: Tool, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the catalogue keeps of a loaded built-in (scripts/gen_catalog.py, which passes
    the ``schema`` pydantic makes of its arguments now, not the stored one)."""
    return {
        "description": tool.description,
        "schema": tool.schema if schema is None else schema,
        "kind": tool.kind,
        "annotations": tool.annotations.to_wire(),
        "requires": sorted(tool.requires),
        "describes": tool.describe is not None,
        "conditional": tool.available is not None,
        "eager": tool.eager,
    }


async def _not_loaded(args: Any, ctx: ToolContext) -> ToolResult:
    raise AssertionError("a lazy built-in runs through its module's tool")


@dataclass(frozen=True)
class LazyBuiltin(Tool):
    """A built-in described by the catalogue; its module is imported when it first runs
    (or, for one that completes its description per worktree, when it is listed)."""

    describes: bool = False

    def load(self) -> Tool:
        return loaded_builtin(self.id)

    def described_for(self, host: Host, caller: Caller | None = None) -> Tool:
        return self.load().described_for(host, caller) if self.describes else self

    async def run(self, raw_args: Any, ctx: ToolContext) -> ToolResult:
        return await self.load().run(raw_args, ctx)


def _lazy(name: str, entry: dict[str, Any]) -> Tool:
    hints = entry["annotations"]
    return LazyBuiltin(
        id=name,
        description=entry["description"],
        parameters=NoArgs,
        execute=_not_loaded,
        kind=entry["kind"],
        annotations=Annotations(
            read_only=hints["readOnlyHint"],
            destructive=hints["destructiveHint"],
            idempotent=hints["idempotentHint"],
            open_world=hints["openWorldHint"],
        ),
        requires=frozenset(entry["requires"]),
        schema=entry["schema"],
        describes=entry["describes"],
        available=_available(name) if entry["conditional"] else None,
        eager=entry["eager"],
    )


def _available(name: str) -> Available:
    """A listed-only-sometimes built-in (task, websearch) decides without its module."""

    def available(host: Host, capabilities: frozenset[str]) -> bool:
        from tools.builtin import listed

        check: Available = getattr(listed, name)
        return check(host, capabilities)

    return available
