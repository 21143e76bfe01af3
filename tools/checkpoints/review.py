"""The after-the-fact review: files changed outside toolhost during a turn, offered as a
review (keep or undo, per file and per hunk) once the turn has ended.

``ask_for`` builds the ask every front door sends: over the sidecar's JSON-RPC a
``permission/ask`` shaped like an edit review (``metadata.files``, ``metadata.hunks``,
``metadata.kind = "afterTheFact"``), so both editors' review windows show it; ``toolhost
acp`` turns the same request into ``session/request_permission`` with ``diff`` content
and the options keep (allow_once) and undo (reject_once). The diff runs from what the
file held when the turn began to what it holds now, so "accepting" a hunk keeps it.

``settle`` applies the answer: a rejection undoes every file; an acceptance keeps
everything, or, narrowed, keeps the files and hunks it names and undoes the rest (a
hunk left out is put back as it was; the file's other lines stay as they are now).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.changes.diff import diff_texts
from tools.changes.hunks import Hunk, apply_hunks, parse_hunks
from tools.checkpoints.summary import PathChange
from tools.checkpoints.turns import Checkpoints
from tools.fsio import decode
from tools.permission.asks import PermissionReply, PermissionRequest

KIND = "afterTheFact"


@dataclass
class OutsideFile:
    change: PathChange
    relative: str
    before: str | None  # text when the turn began (None: the file did not exist)
    after: str | None  # text now (None: deleted)
    hunks: list[Hunk]
    patch: str


def files_of(checkpoints: Checkpoints, checkpoint_id: str) -> list[OutsideFile]:
    """The checkpoint's outside changes that can be undone, as texts and hunks."""
    found = []
    for change in checkpoints.outside_changes(checkpoint_id):
        if change.before.kind == "unknown":
            continue
        relative = checkpoints.display(change.path)
        try:
            old_bytes, new_bytes = checkpoints.diff_texts(checkpoint_id, change.path)
        except (KeyError, OSError):
            continue
        if old_bytes is None and new_bytes is None:
            continue  # made and removed again (an undo came first): nothing to review
        before = decode(old_bytes).text if old_bytes is not None else None
        after = decode(new_bytes).text if new_bytes is not None else None
        diff = diff_texts(
            before or "",
            after or "",
            relative,
            old_exists=before is not None,
            new_exists=after is not None,
        )
        hunks = parse_hunks(relative, diff.unified)
        found.append(OutsideFile(change, relative, before, after, hunks, diff.unified))
    return found


def ask_for(
    checkpoints: Checkpoints, checkpoint_id: str, session_id: str, files: list[OutsideFile]
) -> PermissionRequest:
    names = ", ".join(f.relative for f in files)
    metadata: dict[str, Any] = {
        "kind": KIND,
        "checkpoint": checkpoint_id,
        "files": [
            {
                "filePath": f.change.path,
                "relativePath": f.relative,
                "type": "add" if f.before is None else "delete" if f.after is None else "update",
                "patch": f.patch,
                "before": f.before,
                "after": f.after,
                "additions": sum(1 for h in f.hunks for line in h.lines if line.startswith("+")),
                "deletions": sum(1 for h in f.hunks for line in h.lines if line.startswith("-")),
            }
            for f in files
        ],
        "hunks": [h.to_wire() for f in files for h in f.hunks],
        "options": [
            {"id": "keep", "kind": "allow_once", "label": "Keep"},
            {"id": "undo", "kind": "reject_once", "label": "Undo"},
        ],
    }
    return PermissionRequest(
        session_id=session_id,
        call_id=f"aft_{checkpoint_id}",
        message_id="",
        tool="toolhost",
        permission="edit",
        patterns=[f.relative for f in files],
        always=[],
        title=f"Changed outside review during the agent's turn: {names}. Keep these changes?",
        metadata=metadata,
    )


def settle(
    checkpoints: Checkpoints, checkpoint_id: str, files: list[OutsideFile], reply: PermissionReply
) -> dict[str, list[str]]:
    """Apply the person's answer: ``{kept, undone, partly, skipped}`` (relative paths;
    ``skipped``: what could not be undone, with why)."""
    keep_all = reply.reply in ("once", "always") and not reply.narrowed
    undo_all = reply.reply == "reject"
    whole = set(reply.files or ())
    chosen = set(reply.hunks or ())
    kept, undone, partly = [], [], []
    for file in files:
        if keep_all or file.relative in whole:
            kept.append(file.relative)
            continue
        mine = [h for h in file.hunks if h.id in chosen] if not undo_all else []
        if mine and file.before is not None and file.after is not None:
            _write_text(file.change.path, apply_hunks(file.before, mine))
            checkpoints.wrote([Path(file.change.path)])
            partly.append(file.relative)
            continue
        undone.append(file.relative)
    skipped: list[str] = []
    if undone:
        paths = [f.change.path for f in files if f.relative in undone]
        result = checkpoints.restore(checkpoint_id, paths=paths, force=paths)
        skipped = [f"{s['path']}: {s['reason']}" for s in result["skipped"]]
        undone = [p for p in undone if p in result["restored"]]
    checkpoints.keep_outside(checkpoint_id, [f.change.path for f in files])
    return {"kept": kept, "undone": undone, "partly": partly, "skipped": skipped}


def _write_text(path: str, text: str) -> None:
    """``text`` in ``path``'s own encoding, BOM and line ends, replaced atomically."""
    current = Path(path)
    encoded = decode(current.read_bytes())
    temp = current.with_name(f".{current.name}.toolhost-review")
    mode = os.stat(path).st_mode & 0o7777
    temp.write_bytes(encoded.encode(text))
    os.chmod(temp, mode)
    os.replace(temp, path)
