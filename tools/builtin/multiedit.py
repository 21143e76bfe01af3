"""``multiedit``: several edits to one file, all or nothing (reference §6.4).

Unlike OpenCode, which runs ``edit`` once per entry and leaves earlier entries
applied when a later one fails, the edits are applied in memory in order and the
file is written once, with one ``edit`` ask for the combined change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from tools.arguments.model import Arguments, NonEmpty
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
class EditEntry(Arguments):
    filePath: str | None = None
    """Accepted for compatibility and ignored: every edit applies to the top-level filePath"""
    oldString: str
    """The text to replace; an empty string in the first edit creates a new file"""
    newString: str
    """The text to put in its place (must differ from oldString)"""
    replaceAll: bool = False
    """Replace every occurrence of oldString (default false)"""


@dataclass(frozen=True, kw_only=True)
class MultiEditParams(Arguments):
    filePath: str
    """Path of the file to change: absolute, or relative to the project directory"""
    edits: Annotated[list[EditEntry], NonEmpty()]
    """The edits, applied in order, each to the result of the one before"""


def apply_all(
    path: Path, before: TextFile | None, edits: list[EditEntry]
) -> tuple[str, list[dict[str, Any]]]:
    """The text after every edit, and a summary per edit."""
    text = before.text if before else ""
    results: list[dict[str, Any]] = []
    for index, entry in enumerate(edits, 1):
        try:
            if entry.oldString == entry.newString:
                raise ToolError(IDENTICAL)
            if entry.oldString == "":
                if before is not None or index > 1:
                    raise ToolError(EMPTY_OLD_STRING)
                text, _ = whole_text(None, entry.newString)
                count = 1
            else:
                text, count = apply_edit(text, entry.oldString, entry.newString, entry.replaceAll)
        except ToolError as error:
            raise ToolError(
                f"Edit {index} of {len(edits)} failed: {error.message}\n\n"
                f"No edits were applied: {path} was left unchanged. Fix edit {index} and "
                "send all the edits again.",
                kind=error.kind,
                metadata={"failedEdit": index},
            ) from error
        results.append({"index": index, "replaced": True, "replacements": count})
    return text, results


async def execute(args: MultiEditParams, ctx: ToolContext) -> ToolResult:
    creates = args.edits[0].oldString == ""
    results: list[dict[str, Any]] = []

    async def transform(path: Path, before: TextFile | None) -> NewText:
        nonlocal results
        text, results = await ctx.run_blocking(apply_all, path, before, args.edits)
        bom = creates and before is None and args.edits[0].newString.startswith(BOM_CHAR)
        return NewText(text, bom=bom)

    changed = await change_file(
        ctx, args.filePath, transform, existing="new" if creates else "existing"
    )
    path, committed = changed.path, changed.committed
    metadata = committed.metadata
    metadata.update(filepath=str(path), results=results)
    output = OUTPUT + diagnostics.edit_notice(path, committed.diagnostics) + committed.note_text
    return ToolResult(title=relative(path, ctx.worktree), output=output, metadata=metadata)


tool = define(
    "multiedit",
    parameters=MultiEditParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
