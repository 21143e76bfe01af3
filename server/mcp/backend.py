"""What ``toolhost mcp`` serves from: its own ToolHost, or an editor's sidecar.

Both speak toolhost's own shapes (``tools/list`` entries, ``ToolResult`` wire
dicts); ``server.mcp.catalogue`` turns them into MCP's.  A call brings ``CallHooks``:
where its progress goes, and who can answer a permission ask when no editor can.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

# A running tool's tools/update params -> the MCP client (progress notifications).
Progress = Callable[[dict[str, Any]], None]
# A permission/ask params -> {"reply": "once"|"always"|"reject", "message"?}, or None
# when nobody can be asked.
Elicit = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
Changed = Callable[[], Coroutine[Any, Any, None]]


@dataclass
class CallHooks:
    progress: Progress
    elicit: Elicit | None = None  # None: the MCP client cannot be asked
    # The call's ``_meta["toolhost/turn"]``; without it, a new turn after 30 s idle.
    turn: str | None = None


def turn_of(meta: Any) -> str | None:
    """A ``tools/call``'s ``_meta["toolhost/turn"]``, when it is a string (both doors)."""
    turn = meta.get("toolhost/turn") if isinstance(meta, dict) else None
    return turn if isinstance(turn, str) and turn else None


class Backend(Protocol):
    """Where tools/list and tools/call go."""

    # Called when the catalogue may have changed (config, custom tools, editor gone).
    on_changed: Changed | None

    @property
    def describe(self) -> str:
        """For logs: what this backend serves, e.g. the editor it is attached to."""
        ...

    async def start(self) -> None:
        """Begin loading; list_tools and call wait for it."""

    async def list_tools(self) -> list[dict[str, Any]]:
        """toolhost ``tools/list`` entries."""
        ...

    async def call(self, tool: str, args: dict[str, Any], hooks: CallHooks) -> dict[str, Any]:
        """A toolhost ``ToolResult`` in its wire form."""
        ...

    async def close(self) -> None: ...
