"""``tools/list`` and ``tools/execute`` as the sidecar answers them, whichever door the
request came through: the editor's connection (``server.handlers``), a ``toolhost mcp``
attached over the socket (``server.attach.listener``), or ``toolhost mcp`` serving a folder
alone (``server.mcp.local``). Each door parses its own params and picks its own bridge and
defaults; what a call then does, and the words of a fault outside the tool, are here once.

No pygls here: ``toolhost mcp`` imports this without the language server.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tools.result import ToolResult

if TYPE_CHECKING:
    from tools.editor import EditorBridge
    from tools.host import ToolHost
    from tools.model import ModelRef

log = logging.getLogger("toolhost.server")


def listing(
    host: ToolHost,
    *,
    model: ModelRef | None,
    capabilities: frozenset[str],
    agent: str,
    session_id: str | None,
) -> list[dict[str, Any]]:
    """The ``tools/list`` entries a caller is offered."""
    tools = host.offered(model=model, capabilities=capabilities, agent=agent, session_id=session_id)
    return [tool.to_wire() for tool in tools]


async def execute(
    host: ToolHost,
    tool: str,
    args: Any,
    *,
    editor: EditorBridge,
    session_id: str | None,
    agent: str,
    model: ModelRef | None,
    call_id: str | None = None,
    message_id: str = "",
    turn_id: str | None = None,
) -> dict[str, Any]:
    """Run one call; its ``ToolResult`` in wire form, a fault outside the tool included."""
    try:
        result = await host.execute(
            tool,
            args,
            editor=editor,
            session_id=session_id,
            call_id=call_id,
            message_id=message_id,
            agent=agent,
            model=model,
            turn_id=turn_id,
        )
    except Exception as error:  # a fault outside the tool (its own are caught in Tool.run)
        log.exception("tools/execute %s failed", tool)
        result = internal_error(tool, error)
    return result.to_wire()


def internal_error(tool: str, error: Exception) -> ToolResult:
    return ToolResult(
        title=tool,
        output=f"toolhost failed unexpectedly while running {tool} "
        f"({type(error).__name__}: {error}). This is a fault in toolhost, not in your "
        "input; it has been logged. You may retry, or continue another way.",
        metadata={"error": "internal"},
        is_error=True,
    )
