"""Committing file changes: one ask with the diff, then an atomic write per file.

write, edit and multiedit all end here, so the diff, the ``edit`` permission ask,
the WorkspaceEdit metadata, the write itself and the diagnostics the change
introduced are handled in one place.  The editor bridge decides *how* a change
lands (through the editor's buffer, or straight to disk); this module decides
*what* lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.changes import diagnostics
from tools.changes.diff import FileDiff, create_file_edit, diff_texts, trim_diff, workspace_edit
from tools.fsio import TextFile
from tools.paths import relative

if TYPE_CHECKING:
    from tools.context import ToolContext


@dataclass
class FileChange:
    path: Path
    before: TextFile | None  # None: the file does not exist yet
    after: str  # the new text, without BOM, in the file's own line endings
    # The new file's encoding, BOM and mode when they are not the old file's (apply_patch).
    form: TextFile | None = None

    @property
    def encoded(self) -> bytes:
        template = self.form or self.before or TextFile("")
        return template.encode(self.after)

    @property
    def mode(self) -> int | None:
        if self.form is not None and self.form.mode is not None:
            return self.form.mode
        return self.before.mode if self.before else None


@dataclass
class PreparedChange:
    change: FileChange
    diff: FileDiff
    edit: dict[str, Any]  # the LSP WorkspaceEdit for this file
    # Set by the editor bridge when the file on disk is not exactly the change (the
    # editor saved something else, e.g. a format-on-save): said to the model.
    note: str = ""
    via_editor: bool = False  # set by the bridge when the editor's buffer took the change


@dataclass
class Committed:
    metadata: dict[str, Any]  # diff, filediff, edit and diagnostics (by URI)
    diagnostics: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)  # new errors
    notes: list[str] = field(default_factory=list)

    @property
    def note_text(self) -> str:
        return "".join(f"\n\n{note}" for note in self.notes)


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


# Above this much text a diff takes milliseconds: worth a worker thread, so a big
# write does not hold up every other request (and cancellation) on the event loop.
THREAD_DIFF_CHARS = 256 * 1024


async def _prepare_all(ctx: ToolContext, changes: list[FileChange]) -> list[PreparedChange]:
    def work() -> list[PreparedChange]:
        return [prepare(ctx, change) for change in changes]

    size = sum(len(c.after) + len(c.before.text if c.before else "") for c in changes)
    return await ctx.run_blocking(work) if size > THREAD_DIFF_CHARS else work()


async def commit(
    ctx: ToolContext,
    changes: list[FileChange],
    *,
    ask_metadata: dict[str, Any] | None = None,
    other_files: bool = False,
) -> Committed:
    """Ask ``edit`` once for all changes, write them, and collect what they introduced.

    ``other_files``: also report new errors in the other files the editor has open
    (``write``).
    """
    prepared = await _prepare_all(ctx, changes)
    unified = "\n".join(p.diff.unified for p in prepared if p.diff.unified)
    await ctx.ask(
        "edit",
        [relative(p.change.path, ctx.worktree) for p in prepared],
        ["*"],
        {
            "filepath": ", ".join(str(p.change.path) for p in prepared),
            "diff": trim_diff(unified),
            # The exact change, so a client can preview the proposed text, not rebuild it.
            "edit": merge_workspace_edits([p.edit for p in prepared]),
            **(ask_metadata or {}),
        },
        title=f"Edit {', '.join(relative(p.change.path, ctx.worktree) for p in prepared)}",
    )
    paths = [p.change.path for p in prepared]
    others = [p for p in ctx.editor.open_documents() if p not in paths] if other_files else []
    watch = DiagnosticsWatch(ctx, paths, others)
    await watch.baseline()
    for item in prepared:
        await ctx.editor.write_change(ctx, item)
        if item.note:  # the model must read what the editor saved before editing again
            ctx.session.read_stamps.pop(str(item.change.path), None)
        else:
            ctx.session.record_read(item.change.path)
    new = await watch.introduced()
    metadata = {
        "diff": unified,
        "filediff": [
            {"file": p.diff.path, "additions": p.diff.additions, "deletions": p.diff.deletions}
            for p in prepared
        ],
        "edit": merge_workspace_edits([p.edit for p in prepared]),
        "diagnostics": diagnostics.to_metadata(new),
    }
    return Committed(metadata, new, [p.note for p in prepared if p.note])


class DiagnosticsWatch:
    """A baseline of the editor's diagnostics before a change, and the errors it added.

    The changed files are waited for (bounded); other files are read as they are
    then, since nothing tells when a language server is done re-checking them.
    A baseline the editor could not give means no report: without it every old
    error would look new.
    """

    def __init__(self, ctx: ToolContext, paths: list[Path], others: list[Path]) -> None:
        self.editor = ctx.editor
        self.paths = list(dict.fromkeys(paths))
        self.others = [p for p in dict.fromkeys(others) if p not in self.paths]
        self.before: dict[Path, list[dict[str, Any]]] | None = None

    async def baseline(self) -> None:
        if self.paths:
            self.before = await self.editor.diagnostics(self.paths + self.others, 0)

    async def introduced(self) -> dict[Path, list[dict[str, Any]]]:
        if self.before is None:
            return {}
        after = await self.editor.diagnostics(self.paths, None)
        if after is None:
            return {}
        if self.others:
            after = {**(await self.editor.diagnostics(self.others, 0) or {}), **after}
        # In the order asked for; a file without a baseline cannot say what is new.
        ordered = {p: after[p] for p in [*self.paths, *self.others] if p in after}
        return diagnostics.introduced_by_file(self.before, ordered)


def merge_workspace_edits(edits: list[dict[str, Any]]) -> dict[str, Any]:
    document_changes: list[Any] = []
    for edit in edits:
        document_changes.extend(edit.get("documentChanges", []))
    return {"documentChanges": document_changes}
