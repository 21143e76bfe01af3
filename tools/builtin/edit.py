"""``edit``: replace one exact (or leniently matched) piece of a file (reference §6.3).

The helpers below are shared with ``write`` and ``multiedit``: loading a file with
its encoding, BOM and mode, turning whole-file content into the file's own form,
and committing a change with OS failures reported to the model.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tools.changes import diagnostics
from tools.changes.commit import Committed, FileChange, commit
from tools.changes.replacers import IDENTICAL, Span, find_match, splice
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio import TextFile, read_text, to_line_endings
from tools.paths import assert_external_directory, relative, resolve
from tools.result import ToolResult
from tools.tool import Annotations, define

BOM_CHAR = "\ufeff"
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


# --- helpers shared by write and multiedit --------------------------------------------------


def require_path(file_path: str, ctx: ToolContext) -> Path:
    if not file_path:
        raise ToolError("filePath is required")
    return resolve(file_path, ctx.directory)


async def load(ctx: ToolContext, path: Path) -> TextFile | None:
    """The file with its encoding, BOM and mode, or None when it does not exist yet.

    An editor buffer with unsaved changes supplies the text, as it does for ``read``:
    the model's oldString comes from what it read, and the editor applies the
    change to that buffer.
    """
    try:
        before = await ctx.run_blocking(_load, path)
    except OSError as error:
        raise ToolError(f"Could not access {path}: {error.strerror or error}") from error
    unsaved = ctx.editor.unsaved_text(path) if before is not None else None
    return before if unsaved is None else replace(before, text=unsaved.removeprefix(BOM_CHAR))


def _load(path: Path) -> TextFile | None:
    if path.is_dir():
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not path.exists():
        _check_parents(path)
        return None
    if not path.is_file():  # reading a FIFO or a device would block or never end
        raise ToolError(f"Not a regular file: {path}")
    return read_text(path)


def _check_parents(path: Path) -> None:
    # Otherwise creating the parents fails with a bare "File exists".
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ToolError(f"Cannot create {path}: {parent} is a file, not a directory.")
            return


async def load_existing(ctx: ToolContext, path: Path) -> TextFile:
    before = await load(ctx, path)
    if before is None:
        raise NotFoundError(f"File {path} not found")
    return before


def whole_text(before: TextFile | None, content: str) -> tuple[str, bool]:
    """Content that replaces a whole file, and whether its BOM state was overruled.

    The existing file's BOM is kept and one at the start of ``content`` is never
    adopted (OpenCode's ``bomDiscarded``: a leading BOM can break shebangs).
    """
    had_bom = bool(before and before.bom)
    sent_bom = content.startswith(BOM_CHAR)
    return content.removeprefix(BOM_CHAR), sent_bom != had_bom


async def commit_change(
    ctx: ToolContext, change: FileChange, *, other_files: bool = False
) -> Committed:
    """Ask, write and stamp one file; an unencodable text or an OS failure is the model's to see."""
    _check_encodable(change)
    try:
        return await commit(ctx, [change], other_files=other_files)
    except OSError as error:
        raise ToolError(
            f"Could not write {change.path}: {error.strerror or error}. The file was not changed."
        ) from error


def _check_encodable(change: FileChange) -> None:
    try:
        change.encoded  # noqa: B018 - encoding is the check
    except UnicodeEncodeError as error:
        encoding = change.before.encoding if change.before else "utf-8"
        raise ToolError(
            f"Cannot write {change.path}: it is encoded as {unencodable(error, encoding)}"
        ) from error


def unencodable(error: UnicodeEncodeError, encoding: str) -> str:
    """The end of an "is encoded as ..." error: which character, and what to do."""
    bad = error.object[error.start : error.end]
    return (
        f"{encoding}, which cannot represent {bad!r} (U+{ord(bad[0]):04X}) in the new text. "
        f"Nothing was written. Use only characters that {encoding} can encode."
    )


def apply_edit(text: str, old: str, new: str, replace_all: bool) -> tuple[str, int]:
    """Replace ``old`` in ``text`` in the text's own line endings; returns (text, count)."""
    crlf = "\r\n" in text
    old = to_line_endings(old, crlf)
    new = to_line_endings(new, crlf)
    if old == new:  # they may differ only in line endings
        raise ToolError(IDENTICAL)
    spans = find_match(text, old, replace_all)
    if crlf:
        spans = [_keep_crlf(text, span, old) for span in spans]
    return splice(text, spans, new), len(spans)


def _keep_crlf(text: str, span: Span, old: str) -> Span:
    # A lenient match spans whole lines split on "\n", so in a CRLF file it can end
    # between "\r" and "\n"; replacing that "\r" would leave a bare "\n" behind.
    start, end = span
    if end < len(text) and text[end - 1 : end + 1] == "\r\n" and not old.endswith("\r"):
        return start, end - 1
    return span


# --- the tool --------------------------------------------------------------------------------


async def execute(args: EditParams, ctx: ToolContext) -> ToolResult:
    path = require_path(args.filePath, ctx)
    if args.oldString == args.newString:
        raise ToolError(IDENTICAL)
    await assert_external_directory(ctx, path, "file")
    extra: dict[str, Any] = {}
    async with ctx.host.sessions.file_lock(path):
        if args.oldString == "":
            # Create or overwrite: no read-before-write, as in OpenCode.
            before = await load(ctx, path)
            after, bom_discarded = whole_text(before, args.newString)
            if bom_discarded:
                extra["bomDiscarded"] = True
        else:
            before = await load_existing(ctx, path)
            ctx.session.assert_fresh(path)
            after, _ = await ctx.run_blocking(
                apply_edit, before.text, args.oldString, args.newString, args.replaceAll
            )
        committed = await commit_change(ctx, FileChange(path, before, after))
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
