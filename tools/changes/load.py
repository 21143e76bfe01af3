"""Planning a change: the file as the agent sees it, and text operations on it.

What ``edit``, ``write`` and ``multiedit`` share before they hand a change set to the
pipeline: resolving the path, loading the file with its encoding, BOM and mode (an
editor buffer with unsaved changes supplies the text, as it does for ``read``),
whole-file content in the file's own form, and replacing one piece of text.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

from tools.changes.changeset import ChangeSet, FileChange
from tools.changes.failures import unencodable
from tools.changes.replacers import IDENTICAL, Span, find_match, replace_found, splice
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio import TextFile, dirfd, read_text, to_line_endings, writable
from tools.fsio.paths import resolve

BOM_CHAR = "\ufeff"
# OpenCode 1.18.33's words, so a model trained on them knows what to do next.
EMPTY_OLD_STRING = (
    "oldString cannot be empty when editing an existing file. Provide the exact text to "
    "replace, or use write for an intentional full-file replacement."
)


def require_path(file_path: str, ctx: ToolContext) -> Path:
    if not file_path:
        raise ToolError("filePath is required")
    return resolve(file_path, ctx.directory)


async def load(ctx: ToolContext, path: Path) -> tuple[TextFile | None, bool]:
    """The file (None when it does not exist yet), and whether its text is an unsaved buffer.

    The model's oldString comes from what it read, and the editor applies the change
    to that buffer.
    """
    try:
        before = await ctx.run_blocking(_load, path, ctx.real(path))
    except OSError as error:
        raise ToolError(f"Could not access {path}: {error.strerror or error}") from error
    unsaved = ctx.editor.unsaved_text(path) if before is not None else None
    if before is None or unsaved is None:
        return before, False
    return replace(before, text=unsaved.removeprefix(BOM_CHAR)), True


def _load(path: Path, real: Path) -> TextFile | None:
    """The file at ``real`` (where ``path`` was checked to be), read through directory fds."""
    try:
        info = dirfd.lstat(real)
    except NotADirectoryError:
        info = None
    if info is None:
        _check_parents(path)
        return None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"Path is a directory, not a file: {path}")
    if not stat.S_ISREG(info.st_mode):  # reading a FIFO or a device would block or never end
        raise ToolError(f"Not a regular file: {path}")
    check_writable(path, info)
    return read_text(path, real)


def check_writable(path: Path, info: os.stat_result) -> None:
    """Refuse, before anyone is asked, a change to a file its own mode makes read-only."""
    if not writable(info):
        mode = stat.S_IMODE(info.st_mode)
        raise ToolError(
            f"Cannot change {path}: it is read-only (mode {mode:04o}), and its own "
            "permissions are respected. Nothing was changed. If it should change, ask the "
            "user to make it writable (e.g. chmod u+w)."
        )


def _check_parents(path: Path) -> None:
    # Otherwise creating the parents fails with a bare "File exists".
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ToolError(f"Cannot create {path}: {parent} is a file, not a directory.")
            return


async def load_existing(ctx: ToolContext, path: Path) -> tuple[TextFile, bool]:
    before, unsaved = await load(ctx, path)
    if before is None:
        raise NotFoundError(f"File {path} not found")
    return before, unsaved


def whole_text(before: TextFile | None, content: str) -> tuple[str, bool]:
    """Content that replaces a whole file, and whether its BOM state was overruled.

    An existing file keeps its BOM state: a BOM at the start of ``content`` is not
    adopted (``bomDiscarded``: a leading BOM can break shebangs). A new file keeps the
    BOM its content starts with, as OpenCode 1.18.33 does (``new_text(..., bom=...)``).
    """
    sent_bom = content.startswith(BOM_CHAR)
    if before is None:
        return content.removeprefix(BOM_CHAR), False
    return content.removeprefix(BOM_CHAR), sent_bom != bool(before.bom)


def apply_edit(text: str, old: str, new: str, replace_all: bool) -> tuple[str, int]:
    """Replace ``old`` in ``text`` in the text's own line endings; returns (text, count)."""
    # "\r" first: a one-character search is a memchr, while CPython's two-character
    # search crawls through a large LF-only text (7 ms on 5 MB).
    crlf = "\r" in text and "\r\n" in text
    old = to_line_endings(old, crlf)
    new = to_line_endings(new, crlf)
    if old == new:  # they may differ only in line endings
        raise ToolError(IDENTICAL)
    spans = find_match(text, old, replace_all)
    if crlf:
        kept = [_keep_crlf(text, span, old) for span in spans]
        if kept != spans:  # no longer whole occurrences of one piece
            return splice(text, kept, new), len(kept)
    return replace_found(text, spans, new), len(spans)


def _keep_crlf(text: str, span: Span, old: str) -> Span:
    # A lenient match spans whole lines split on "\n", so in a CRLF file it can end
    # between "\r" and "\n"; replacing that "\r" would leave a bare "\n" behind.
    start, end = span
    if end < len(text) and text[end - 1 : end + 1] == "\r\n" and not old.endswith("\r"):
        return start, end - 1
    return span


def single_file(change: FileChange, unsaved: bool) -> ChangeSet:
    """The change set of a single-file tool; an unencodable text is the model's to fix."""
    error = change.encoding_error()
    if error is not None:
        encoding = change.after.encoding if change.after else "utf-8"
        raise ToolError(
            f"Cannot write {change.path}: it is encoded as {unencodable(error, encoding)}"
        )
    return ChangeSet([change], frozenset({change.path}) if unsaved else frozenset())
