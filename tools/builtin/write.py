"""``write``: create a file or replace all of it (reference §6.2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.arguments.model import Arguments
from tools.changes import diagnostics
from tools.changes.load import BOM_CHAR, whole_text
from tools.changes.single import NewText, change_file
from tools.context import ToolContext
from tools.fsio import TextFile
from tools.fsio.paths import relative
from tools.result import ToolResult
from tools.tool import Annotations, define


@dataclass(frozen=True, kw_only=True)
class WriteParams(Arguments):
    filePath: str
    """Path of the file to write: absolute, or relative to the project directory"""
    content: str
    """The complete new content of the file"""


async def execute(args: WriteParams, ctx: ToolContext) -> ToolResult:
    bom_discarded = False

    async def transform(path: Path, before: TextFile | None) -> NewText:
        nonlocal bom_discarded
        text, bom_discarded = whole_text(before, args.content)
        return NewText(text, bom=args.content.startswith(BOM_CHAR))  # kept only by a new file

    changed = await change_file(ctx, args.filePath, transform, existing="either", other_files=True)
    path, committed = changed.path, changed.committed
    metadata = committed.metadata
    metadata.update(filepath=str(path), exists=changed.before is not None)
    if bom_discarded:
        metadata["bomDiscarded"] = True
    return ToolResult(
        title=relative(path, ctx.worktree),
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
