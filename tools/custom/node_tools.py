"""A ``Tool`` for each JS/TS export: its calls go to the host, its answers become results."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tools.arguments.schema import normalise_json_schema
from tools.context import ToolContext
from tools.custom.node_channel import HostFailed
from tools.custom.node_host import NodeHost
from tools.errors import ToolError
from tools.result import ToolResult
from tools.tool import Tool, coerce_result, define

log = logging.getLogger("toolhost.custom.node")


class JsonArgs(BaseModel):
    """Any JSON object: a JS tool's arguments are checked by its own zod schema."""

    model_config = ConfigDict(extra="allow")


def make_tool(
    host: NodeHost, tool_id: str, path: Path, export: str, description: str, schema: dict[str, Any]
) -> Tool:
    """A ``Tool`` whose calls go to ``export`` of ``path`` in the Node host."""

    async def execute(args: JsonArgs, ctx: ToolContext) -> ToolResult:
        request = {
            "file": str(path),
            "export": export,
            "tool": tool_id,
            "args": args.model_extra or {},
            "ctx": {
                "sessionID": ctx.session_id,
                "messageID": ctx.message_id,
                "callID": ctx.call_id,
                "agent": ctx.agent,
                "directory": str(ctx.directory),
                "worktree": str(ctx.worktree),
            },
        }
        try:
            answer = await host.call(request, ctx)
        except HostFailed as error:
            raise ToolError(
                f"The {tool_id} tool could not run: {error}. Retrying may work; the host "
                "restarts on the next call.",
                kind="internal",
            ) from None
        if "error" in answer:
            raise _js_error(tool_id, answer["error"] or {})
        if answer.get("undefined"):
            raise ToolError(
                f"The {tool_id} tool returned nothing (undefined); a tool must return a string "
                'or an object with "output". This is a fault in the tool, not in your input.',
                kind="internal",
            )
        return coerce_result(answer.get("value"), tool_id)

    tool = define(tool_id, parameters=JsonArgs, execute=execute, description=description)
    return replace(tool, schema=normalise_json_schema(schema))


def _js_error(tool_id: str, info: dict[str, Any]) -> ToolError:
    kind = info.get("kind")
    message = str(info.get("message") or "")
    if kind in ("invalid_arguments", "permission_denied", "permission_rejected", "failed"):
        if info.get("bun"):
            message = f"The {tool_id} tool cannot run here. {message}"
        return ToolError(message, kind=kind)
    if info.get("stack"):
        log.warning("JS/TS tool %s threw:\n%s", tool_id, info["stack"])
    return ToolError(
        f"The {tool_id} tool failed unexpectedly ({info.get('name') or 'Error'}: {message}). "
        "This is a fault in the tool, not in your input; it has been logged. "
        "You may retry, or continue another way.",
        kind="internal",
    )
