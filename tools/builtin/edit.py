"""``edit``: replace one exact (or leniently matched) piece of a file (reference §6.3)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tools.changes import diagnostics
from tools.changes.commit import commit_file, locked
from tools.changes.load import apply_edit, load, load_existing, require_path, whole_text
from tools.changes.replacers import IDENTICAL
from tools.context import ToolContext
from tools.errors import ToolError
from tools.paths import assert_external_directory, relative
from tools.result import ToolResult
from tools.tool import Annotations, define

OUTPUT = "Edit applied successfully."


class EditParams(BaseModel):
    filePath: str = Field(
        description="Path of the file to change: absolute, or relative to the project directory"
    )
    oldString: str = Field(
        description="The text to replace; an empty string creates the file (or replaces all "
        "of it) with newString"
    )
    newString: str = Field(description="The text to put in its place (must differ from oldString)")
    replaceAll: bool = Field(
        default=False, description="Replace every occurrence of oldString (default false)"
    )


async def execute(args: EditParams, ctx: ToolContext) -> ToolResult:
    path = require_path(args.filePath, ctx)
    if args.oldString == args.newString:
        raise ToolError(IDENTICAL)
    await assert_external_directory(ctx, path, "file")
    extra: dict[str, Any] = {}
    async with locked(ctx, [path]):
        if args.oldString == "":
            # Create or overwrite: no read-before-write, as in OpenCode.
            before, unsaved = await load(ctx, path)
            after, bom_discarded = whole_text(before, args.newString)
            if bom_discarded:
                extra["bomDiscarded"] = True
        else:
            before, unsaved = await load_existing(ctx, path)
            ctx.session.assert_fresh(path)
            after, _ = await ctx.run_blocking(
                apply_edit, before.text, args.oldString, args.newString, args.replaceAll
            )
        committed = await commit_file(ctx, path, before, after, unsaved)
    return ToolResult(
        title=relative(path, ctx.worktree),
        output=OUTPUT + diagnostics.edit_notice(path, committed.diagnostics) + committed.note_text,
        metadata={**committed.metadata, "filepath": str(path), **extra},
    )


tool = define(
    "edit",
    parameters=EditParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
