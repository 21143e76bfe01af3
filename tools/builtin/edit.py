"""``edit``: replace one exact (or leniently matched) piece of a file (reference §6.3)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.arguments.model import Arguments
from tools.changes import diagnostics
from tools.changes.load import BOM_CHAR, EMPTY_OLD_STRING, apply_edit, whole_text
from tools.changes.replacers import IDENTICAL
from tools.changes.single import NewText, change_file
from tools.context import ToolContext
from tools.errors import ToolError
from tools.fsio import TextFile
from tools.fsio.paths import relative
from tools.result import ToolResult
from tools.tool import Annotations, define

OUTPUT = "Edit applied successfully."


@dataclass(frozen=True, kw_only=True)
class EditParams(Arguments):
    filePath: str
    """Path of the file to change: absolute, or relative to the project directory"""
    oldString: str
    """The text to replace; an empty string creates a new file with newString (use write to
    replace all of an existing file)"""
    newString: str
    """The text to put in its place (must differ from oldString)"""
    replaceAll: bool = False
    """Replace every occurrence of oldString (default false)"""


async def execute(args: EditParams, ctx: ToolContext) -> ToolResult:
    if args.filePath and args.oldString == args.newString:
        raise ToolError(IDENTICAL)

    async def transform(path: Path, before: TextFile | None) -> NewText:
        if args.oldString == "":
            # Only a new file: OpenCode 1.18.33 refuses to overwrite an existing one.
            if before is not None:
                raise ToolError(EMPTY_OLD_STRING)
            text, _ = whole_text(None, args.newString)
            return NewText(text, bom=args.newString.startswith(BOM_CHAR))
        assert before is not None  # existing="existing"
        text, _ = await ctx.run_blocking(
            apply_edit, before.text, args.oldString, args.newString, args.replaceAll
        )
        return NewText(text)

    creates = args.oldString == ""
    changed = await change_file(
        ctx, args.filePath, transform, existing="new" if creates else "existing"
    )
    path, committed = changed.path, changed.committed
    return ToolResult(
        title=relative(path, ctx.worktree),
        output=OUTPUT + diagnostics.edit_notice(path, committed.diagnostics) + committed.note_text,
        metadata={**committed.metadata, "filepath": str(path)},
    )


tool = define(
    "edit",
    parameters=EditParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
