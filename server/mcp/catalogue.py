"""toolhost's catalogue and results in MCP's shapes (plain JSON, no SDK types).

A toolhost tool (``tools/list``'s entry) becomes an MCP ``Tool``: ``name`` is the
id, ``inputSchema`` the parameters schema unchanged, ``annotations`` the catalogue's
hints.  A ``ToolResult`` becomes a ``CallToolResult``: the output as a text block,
image attachments as ``image`` blocks (other files as embedded resources),
``isError`` as is, and the metadata (diff, WorkspaceEdit, diagnostics...) under
``_meta``.

Not ``structuredContent``: that field is for tools that declare an ``outputSchema``,
and hosts that find it may give it to the model in place of ``content``; the
metadata is for the client (a diff view, an undo), never the model's input.
"""

from __future__ import annotations

from typing import Any

# _meta keys (MCP: a prefix, then a name; the prefix is ours).
META_TITLE = "toolhost/title"
META_METADATA = "toolhost/metadata"
META_KIND = "toolhost/kind"

# A person's name for each built-in (the same as the VS Code tool names); a custom
# tool is shown by its id.
TITLES = {
    "read": "Read file",
    "write": "Write file",
    "edit": "Edit file",
    "multiedit": "Edit file (several edits)",
    "apply_patch": "Apply patch",
    "glob": "Find files",
    "grep": "Search file contents",
    "list": "List directory",
    "bash": "Run command",
    "webfetch": "Fetch URL",
    "todowrite": "Update task list",
    "todoread": "Read task list",
    "skill": "Load skill",
    "lsp": "Language features",
    "task": "Run sub-agent",
    "question": "Ask the user",
}


def mcp_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """One ``tools/list`` entry of toolhost as an MCP ``Tool``."""
    tool_id = str(tool["id"])
    title = TITLES.get(tool_id, tool_id)
    annotations = {"title": title, **(tool.get("annotations") or {})}
    return {
        "name": tool_id,
        "title": title,
        "description": tool.get("description") or "",
        "inputSchema": tool.get("parameters") or {"type": "object", "properties": {}},
        "annotations": annotations,
        "_meta": {META_KIND: tool.get("kind", "other")},
    }


def mcp_result(result: dict[str, Any], *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A toolhost ``ToolResult`` (wire form) as an MCP ``CallToolResult``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": result.get("output") or ""}]
    for attachment in result.get("attachments") or []:
        block = attachment_block(attachment)
        if block is not None:
            content.append(block)
    extra: dict[str, Any] = {
        META_TITLE: result.get("title") or "",
        META_METADATA: result.get("metadata") or {},
        **(meta or {}),
    }
    return {"content": content, "isError": bool(result.get("isError")), "_meta": extra}


def attachment_block(attachment: dict[str, Any]) -> dict[str, Any] | None:
    """A ``data:`` URL attachment as an ``image``/``audio`` block or an embedded resource."""
    url = attachment.get("url")
    mime = attachment.get("mime") or "application/octet-stream"
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, _, data = url.partition(",")
    if not header.endswith(";base64"):
        import base64
        import urllib.parse

        data = base64.b64encode(urllib.parse.unquote_to_bytes(data)).decode("ascii")
    if mime.startswith("image/"):
        return {"type": "image", "data": data, "mimeType": mime}
    if mime.startswith("audio/"):
        return {"type": "audio", "data": data, "mimeType": mime}
    name = attachment.get("filename") or "attachment"
    return {
        "type": "resource",
        "resource": {"uri": f"toolhost://attachment/{name}", "mimeType": mime, "blob": data},
    }


def error_result(text: str) -> dict[str, Any]:
    """A tool-level failure that did not come from a tool (e.g. the editor went away)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}
