"""toolhost's reviews in ACP's words.

Standalone, a ``permission/ask`` of the proxy's own sidecar becomes the ACP client's
``session/request_permission``: the tool call's ``content`` holds one ``diff`` per
file (its whole text before and after, ``oldText`` null for a new file) or, for a
command, its text; the options are allow_once / allow_always / reject_once, and the
chosen one is the review's answer.  Attached to an editor, the editor reviews; once
a change has landed the ACP client is shown it as a ``session/update`` tool call with
the same diffs (``landed_update``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tools.changes.hunks import Hunk, apply_hunks, parse_hunks

log = logging.getLogger("toolhost.acp")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE = "allow_once", "allow_always", "reject_once"
CANCELLED = "The user dismissed the review without answering, so nothing was done."
KINDS = {"edit": "edit", "bash": "execute", "read": "read", "webfetch": "fetch"}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _reversed(hunk: Hunk) -> Hunk:
    """The hunk that undoes ``hunk``: applied to the new text, it gives the old."""
    return Hunk(hunk.id, hunk.file, hunk.header, hunk.lines, hunk.new_start - 1, hunk.new, hunk.old)


def diff_items(files: list[dict[str, Any]], *, landed: bool) -> list[dict[str, Any]]:
    """One ACP ``diff`` per file of an edit's ``metadata.files``.

    Before it lands (``landed`` false) the disk holds the old text and the patch gives
    the new; after, the disk holds the new text and the patch, reversed, the old.
    """
    items = []
    for entry in files:
        path = Path(str(entry.get("filePath", "")))
        target = Path(str(entry["movePath"])) if entry.get("movePath") else path
        kind = entry.get("type")
        hunks = parse_hunks(str(entry.get("relativePath", path.name)), str(entry.get("patch", "")))
        old: str | None
        if landed:
            new = _read(target) or ""
            old = None if kind == "add" else apply_hunks(new, [_reversed(h) for h in hunks])
        else:
            old = None if kind == "add" else _read(path)
            new = "" if kind == "delete" else apply_hunks(old or "", hunks)
        items.append({"type": "diff", "path": str(target), "oldText": old, "newText": new})
    return items


def tool_call(ask: dict[str, Any]) -> dict[str, Any]:
    """The ``toolCall`` of a ``session/request_permission`` for one toolhost ask."""
    metadata = ask.get("metadata") if isinstance(ask.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    permission = str(ask.get("permission", ""))
    files = metadata.get("files")
    content: list[dict[str, Any]]
    locations = []
    if isinstance(files, list) and files:
        content = diff_items(files, landed=False)
        locations = [{"path": item["path"]} for item in content]
    else:
        words = metadata.get("command") or metadata.get("description") or ask.get("patterns")
        if isinstance(words, list):
            words = ", ".join(str(w) for w in words)
        text = f"$ {words}" if permission == "bash" else str(words or permission)
        content = [{"type": "content", "content": {"type": "text", "text": text}}]
    call: dict[str, Any] = {
        "toolCallId": f"toolhost-{ask.get('id') or ask.get('callID')}",
        "title": str(ask.get("title") or f"toolhost asks: {permission}"),
        "kind": KINDS.get(permission, "other"),
        "status": "pending",
        "content": content,
        "rawInput": {
            "tool": ask.get("tool"),
            "permission": permission,
            "patterns": ask.get("patterns"),
        },
    }
    if locations:
        call["locations"] = locations
    return call


def options(ask: dict[str, Any]) -> list[dict[str, Any]]:
    always = ask.get("alwaysOptions")
    label = always[0].get("label") if isinstance(always, list) and always else None
    return [
        {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": ALLOW_ONCE},
        {
            "optionId": ALLOW_ALWAYS,
            "name": f"Always allow {label}" if label else "Always allow (this session)",
            "kind": ALLOW_ALWAYS,
        },
        {"optionId": REJECT_ONCE, "name": "Reject", "kind": REJECT_ONCE},
    ]


def request(acp_session: str, ask: dict[str, Any]) -> dict[str, Any]:
    """``session/request_permission``'s params."""
    return {"sessionId": acp_session, "toolCall": tool_call(ask), "options": options(ask)}


def reply(outcome: Any) -> dict[str, Any]:
    """The ``permission/ask`` answer for the client's ``RequestPermissionResponse``."""
    chosen = outcome.get("outcome") if isinstance(outcome, dict) else None
    if isinstance(chosen, dict) and chosen.get("outcome") == "selected":
        option = chosen.get("optionId")
        if option == ALLOW_ONCE:
            return {"reply": "once"}
        if option == ALLOW_ALWAYS:
            return {"reply": "always", "scope": "session"}
        if option == REJECT_ONCE:
            return {"reply": "reject"}
        log.warning("the client chose an option we did not offer: %r; rejected", option)
        return {"reply": "reject", "message": f"The answer {option!r} is not an option."}
    return {"reply": "reject", "message": CANCELLED}


def landed_update(
    acp_session: str, call_id: str, tool: str, result: dict[str, Any]
) -> dict[str, Any] | None:
    """The ``session/update`` showing what an attached call changed; None when nothing."""
    metadata = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    files = metadata.get("files")
    if not isinstance(files, list) or not files:
        return None
    content = diff_items(files, landed=True)
    failed = bool(result.get("isError")) or bool(metadata.get("error"))
    return {
        "sessionId": acp_session,
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": f"toolhost-{call_id}",
            "title": str(result.get("title") or tool),
            "kind": "edit",
            "status": "failed" if failed else "completed",
            "content": content,
            "locations": [{"path": item["path"]} for item in content],
        },
    }
