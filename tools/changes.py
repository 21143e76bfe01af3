"""Committing file changes: one ask with the diff, then an atomic write per file.

write, edit and multiedit (and later apply_patch) all end here, so the diff, the
``edit`` permission ask, the WorkspaceEdit metadata and the write itself are
built in one place.  The editor bridge decides *how* a change lands (through the
editor's buffer, or straight to disk); this module decides *what* lands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.diff import FileDiff, create_file_edit, diff_texts, trim_diff, workspace_edit
from tools.fsio import TextFile
from tools.paths import relative

if TYPE_CHECKING:
    from tools.context import ToolContext


@dataclass
class FileChange:
    path: Path
    before: TextFile | None  # None: the file does not exist yet
    after: str  # the new text, without BOM, in the file's own line endings

    @property
    def encoded(self) -> bytes:
        template = self.before or TextFile("")
        return template.encode(self.after)

    @property
    def mode(self) -> int | None:
        return self.before.mode if self.before else None


@dataclass
class PreparedChange:
    change: FileChange
    diff: FileDiff
    edit: dict[str, Any]  # the LSP WorkspaceEdit for this file


def prepare(ctx: ToolContext, change: FileChange) -> PreparedChange:
    rel = relative(change.path, ctx.worktree)
    old = change.before.text if change.before else ""
    diff = diff_texts(old, change.after, rel, old_exists=change.before is not None)
    uri = change.path.as_uri()
    edit = (
        workspace_edit(uri, diff.edits)
        if change.before is not None
        else create_file_edit(uri, change.after)
    )
    return PreparedChange(change, diff, edit)


async def commit(
    ctx: ToolContext,
    changes: list[FileChange],
    *,
    ask_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Ask ``edit`` once for all changes, write them, and return the shared metadata."""
    prepared = [prepare(ctx, change) for change in changes]
    unified = "\n".join(p.diff.unified for p in prepared if p.diff.unified)
    await ctx.ask(
        "edit",
        [relative(p.change.path, ctx.worktree) for p in prepared],
        ["*"],
        {
            "filepath": ", ".join(str(p.change.path) for p in prepared),
            "diff": trim_diff(unified),
            **(ask_metadata or {}),
        },
        title=f"Edit {', '.join(relative(p.change.path, ctx.worktree) for p in prepared)}",
    )
    for item in prepared:
        await ctx.editor.write_change(ctx, item)
        ctx.session.record_read(item.change.path)
    return {
        "diff": unified,
        "filediff": [
            {"file": p.diff.path, "additions": p.diff.additions, "deletions": p.diff.deletions}
            for p in prepared
        ],
        "edit": merge_workspace_edits([p.edit for p in prepared]),
    }


def merge_workspace_edits(edits: list[dict[str, Any]]) -> dict[str, Any]:
    document_changes: list[Any] = []
    for edit in edits:
        document_changes.extend(edit.get("documentChanges", []))
    return {"documentChanges": document_changes}
