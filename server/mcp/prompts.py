"""What ``toolhost mcp`` says to the client, whichever protocol door serves it: the server's
instructions, a permission ask as an elicitation form and its answer, and a running
tool's progress line. Plain data and text, no MCP SDK, so the fast door stays light."""

from __future__ import annotations

from typing import Any

INSTRUCTIONS = (
    "toolhost: OpenCode's coding tools (read, edit, write, bash, grep, ...) for this project. "
    "Paths are absolute or relative to the project folder. When toolhost is attached to the "
    "user's editor, reads see the editor's unsaved buffers and edits go through its review."
)
DIFF_CHARS = 4000
DECISIONS = {"once": "Allow once", "always": "Always allow", "reject": "Reject"}
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [{"const": value, "title": title} for value, title in DECISIONS.items()],
            "default": "once",
        },
        "message": {
            "type": "string",
            "title": "Message to the agent",
            "description": "Optional: why not, or what to do instead.",
        },
    },
    "required": ["decision"],
}
DISMISSED = "The user dismissed the permission prompt."


def ask_message(ask: dict[str, Any]) -> str:
    """A permission ask as the text of a prompt: what, on what, and the diff of an edit."""
    patterns = ", ".join(str(p) for p in ask.get("patterns") or [])
    text = (
        f"{ask.get('title') or ask.get('tool')}\n"
        f"{ask.get('tool')} asks for the `{ask.get('permission')}` permission on: {patterns}"
    )
    metadata = ask.get("metadata") or {}
    detail = metadata.get("diff") or metadata.get("command")
    if isinstance(detail, str) and detail:
        if len(detail) > DIFF_CHARS:
            detail = detail[:DIFF_CHARS] + f"\n... ({len(detail) - DIFF_CHARS} more characters)"
        text += f"\n\n{detail}"
    return text


def reply_of(action: Any, content: Any) -> dict[str, Any]:
    """An elicitation's answer (``action``, form ``content``) as a permission reply."""
    if action != "accept":
        return {"reply": "reject", "message": DISMISSED}
    fields = content if isinstance(content, dict) else {}
    decision = fields.get("decision")
    message = fields.get("message")
    return {
        "reply": decision if decision in DECISIONS else "reject",
        "message": message if isinstance(message, str) else None,
    }


def progress_message(update: dict[str, Any]) -> str:
    """One line for a progress bar: the title, or the last line a command printed."""
    metadata = update.get("metadata") or {}
    output = metadata.get("output") if isinstance(metadata, dict) else None
    if isinstance(output, str) and output.strip():
        return output.strip().splitlines()[-1][:200]
    title = update.get("title")
    return str(title)[:200] if title else "working"
