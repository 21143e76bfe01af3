"""``write``: create a file or replace all of it (reference §6.2)."""

from __future__ import annotations

from dataclasses import dataclass

from tools.arguments.model import Arguments
from tools.changes import diagnostics
from tools.changes.commit import commit_file, locked
from tools.changes.load import BOM_CHAR, load, require_path, whole_text
from tools.context import ToolContext
from tools.fsio.paths import relative
from tools.permission.external import assert_external_directory
from tools.result import ToolResult
from tools.tool import Annotations, define


@dataclass(frozen=True, kw_only=True)
class WriteParams(Arguments):
    filePath: str
    """Path of the file to write: absolute, or relative to the project directory"""
    content: str
    """The complete new content of the file"""


async def execute(args: WriteParams, ctx: ToolContext) -> ToolResult:
    path = require_path(args.filePath, ctx)
    await assert_external_directory(ctx, path, "file")
    rel = relative(path, ctx.worktree)
    async with locked(ctx, [path]):
        before, unsaved = await load(ctx, path)
        if before is not None:
            ctx.session.assert_fresh(path)
        after, bom_discarded = whole_text(before, args.content)
        bom = args.content.startswith(BOM_CHAR)  # kept only by a new file
        committed = await commit_file(ctx, path, before, after, unsaved, other_files=True, bom=bom)
    metadata = committed.metadata
    metadata.update(filepath=str(path), exists=before is not None)
    if bom_discarded:
        metadata["bomDiscarded"] = True
    return ToolResult(
        title=rel,
        output="Wrote file successfully."
        + diagnostics.write_notice(path, committed.diagnostics)
        + committed.note_text,
        metadata=metadata,
    )


tool = define(
    "write",
    parameters=WriteParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
