"""``tools/list`` and ``tools/execute``: check params, call the ToolHost, convert.

Imported on first use (see ``server.app``) because it loads the tool framework.
Both wait for the first load of the config files and custom tools (see
``server.state``), so no call runs before the project's rules are known.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from server.bridge import LspEditorBridge
from server.params import parse_execute, parse_list
from tools.permission import PermissionReply, PermissionRequest
from tools.result import ToolResult

if TYPE_CHECKING:
    from server.app import ToolhostServer

log = logging.getLogger("toolhost.server")

TITLE_COMMAND_CHARS = 80


async def tools_list(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    params = parse_list(raw)  # a protocol fault is answered without waiting
    state = server.state
    await state.ready()
    bridge = LspEditorBridge(server, state.options.editor)
    tools = state.host.offered(
        model=params.model or state.options.model,
        capabilities=bridge.capabilities(),
        agent=params.agent or state.options.agent,
    )
    return {"tools": [tool.to_wire() for tool in tools]}


async def tools_execute(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    params = parse_execute(raw)
    state = server.state
    await state.ready()
    bridge = PromptingBridge(
        server, state.options.editor, params.work_done_token, params.message_id or ""
    )
    bridge.begin_progress(params.tool)
    try:
        result = await state.host.execute(
            params.tool,
            params.args,
            editor=bridge,
            session_id=params.session_id or state.session_id,
            call_id=params.call_id,
            message_id=params.message_id or "",
            agent=params.agent or state.options.agent,
            model=params.model or state.options.model,
        )
    except Exception as error:  # a fault outside the tool (its own are caught in Tool.run)
        log.exception("tools/execute %s failed", params.tool)
        result = internal_error(params.tool, error)
    finally:
        bridge.end_progress()
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


class PromptingBridge(LspEditorBridge):
    """The call's bridge, with a title a person can decide on in every prompt."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        title = plain_title(request)
        if title != request.title:
            request = dataclasses.replace(request, title=title)
        return await super().ask_permission(request)


def generic_title(request: PermissionRequest) -> str:
    """The title ``ToolContext.ask`` gives an ask whose tool named none."""
    return f"{request.tool}: {', '.join(request.patterns)}"


def plain_title(request: PermissionRequest) -> str:
    """The tool's own title, else one in plain words from the permission and patterns."""
    if request.title and request.title != generic_title(request):
        return request.title
    patterns = ", ".join(request.patterns)
    meta = request.metadata
    match request.permission:
        case "read":
            return f"Read {patterns}"
        case "edit":
            return f"Edit {patterns}"
        case "bash":
            return f"Run `{short_command(str(meta.get('command') or patterns))}`"
        case "webfetch":
            return f"Fetch {meta.get('url') or patterns}"
        case "external_directory":
            return f"Access files outside the project: {patterns}"
        case "glob":
            return f"Find files matching {patterns}"
        case "grep":
            return f"Search file contents for {patterns}"
        case "list":
            return f"List the folder {patterns}"
        case "skill":
            return f"Load the skill {patterns}"
        case "todowrite":
            return "Update the todo list"
        case "todoread":
            return "Read the todo list"
        case "task":
            return f"Start a sub-agent: {meta.get('description') or patterns}"
    return request.title or f"Allow {request.tool} ({request.permission}): {patterns}"


def short_command(command: str) -> str:
    """A command's first line, cut to fit a prompt title (the prompt's metadata has all)."""
    lines = command.strip().splitlines() or [""]
    text = lines[0]
    if len(text) > TITLE_COMMAND_CHARS:
        text = text[: TITLE_COMMAND_CHARS - 1].rstrip() + "…"
    elif len(lines) > 1:
        text += " …"
    return text
