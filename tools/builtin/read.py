"""``read``: a page of a file's lines, a directory's entries, or an image/PDF (reference §6.1).

Files are streamed by ``tools.fsio.pages``: the first page of a 1 GB file, or of a file
that is one 500 MB line, costs about what the first page of a small file costs.

Deliberate differences from OpenCode (v1.x, newest format):

- The "of N" total needs every remaining line counted. We count them only when at most
  ``tools.fsio.pages.COUNT_CAP`` bytes follow the page; past that, the footer is
  ``(Showing lines A-B. Use offset=B+1 to continue.)``, without a total.
- Lines end at ``\\n`` (a ``\\r`` before it is dropped); a lone ``\\r`` does not end a line
  as it does in Node's readline. Line numbers therefore agree with grep (ripgrep).
- Text is UTF-8 (a UTF-8 BOM is dropped); when the first 4 KiB are not valid UTF-8 the
  file is read as latin-1, as ``tools.fsio.text`` reads it for edits, so the model sees the
  characters an edit will match. As in OpenCode, UTF-16/32 text contains NUL bytes and
  is refused as binary. The 2000-character cut counts code points, not UTF-16 units.
- Media is recognised by its magic bytes only; a media extension (``.png``, ``.pdf`` ...)
  on other content is still subject to the 20 MiB cap, then read as text or refused as
  binary (a Git LFS pointer named ``logo.png`` reads as text).
- Directory pages also stop at the 50 KB byte budget (the footer then says how many
  entries were shown), and an offset past the last entry is an error as for files.
- Names are sorted case-insensitively (code points break ties), close to OpenCode's
  ``localeCompare``; "Did you mean" suggestions are taken from that order too.
- FIFOs, sockets and devices are refused instead of being opened (which could block).

Instruction files come along as OpenCode 1.18.33 brings them (``tools.config.instructions``):
the AGENTS.md (else CLAUDE.md, else CONTEXT.md) of each folder between the project
directory and the file, once per session, appended as a ``<system-reminder>`` and listed
in ``metadata.loaded``. An ``offset`` of 0 reads from line 1, as in 1.18.33.
"""

from __future__ import annotations

import base64
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypeVar

from tools.abort import AbortSignal
from tools.arguments.model import Arguments, AtLeast
from tools.config import instructions
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio import ABORT_EVERY_LINES, MAX_BYTES, Media, Page, dirfd, page_of_text, read_page
from tools.fsio.openat2 import open_for_reading
from tools.fsio.paths import relative, resolve_text
from tools.permission.external import assert_external_directory
from tools.result import Attachment, ToolResult
from tools.tool import Annotations, define

log = logging.getLogger("toolhost.tools.read")

DEFAULT_LIMIT = 2000
SMALL_FILE = 64 * 1024
T = TypeVar("T")
MAX_BYTES_LABEL = f"{MAX_BYTES // 1024} KB"
PREVIEW_LINES = 20
MAX_SUGGESTIONS = 3


@dataclass(frozen=True, kw_only=True)
class ReadParams(Arguments):
    filePath: str
    """Path of the file or directory to read: absolute, or relative to the project directory"""
    offset: Annotated[int, AtLeast(0)] | None = None
    """The line number to start reading from (1-based, 0 also means the first line; for a
    directory, the entry number)"""
    limit: Annotated[int, AtLeast(1)] | None = None
    """The maximum number of lines (or entries) to read (default 2000)"""


# --- the tool ---------------------------------------------------------------------------


async def execute(args: ReadParams, ctx: ToolContext) -> ToolResult:
    # The path stays text through a file's read: this is the most frequent call there
    # is, and each Path costs a parse. The rarer branches take a Path.
    path = resolve_text(args.filePath, ctx.directory)
    info = _stat(path)  # one syscall: cheaper than a trip to a worker thread
    # A regular file is opened for reading now, by one openat2 that follows no link: that
    # is the guard's proof that the path is its own real path, and a small file's page is
    # read from the same fd, so the file is opened once, not twice.
    fd = open_for_reading(path) if info is not None and stat.S_ISREG(info.st_mode) else None
    try:
        return await _read(args, ctx, path, info, fd)
    finally:
        if fd is not None:
            os.close(fd)


async def _read(
    args: ReadParams, ctx: ToolContext, path: str, info: os.stat_result | None, fd: int | None
) -> ToolResult:
    title = relative(path, ctx.worktree)
    is_dir = info is not None and stat.S_ISDIR(info.st_mode)
    await assert_external_directory(
        ctx, path, "directory" if is_dir else "file", opened=fd is not None
    )
    real = ctx.real_text(path)  # where it was checked to be: that is what is read
    await ctx.ask("read", [title], ["*"], {})
    if info is None:
        raise NotFoundError(await ctx.run_blocking(_not_found_message, Path(path)))
    offset = args.offset or 1
    limit = args.limit or DEFAULT_LIMIT
    if is_dir:
        entries = await ctx.run_blocking(_list_directory, Path(path), Path(real), ctx.abort)
        return _directory_result(Path(path), title, entries, offset, limit)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(
            f"Cannot read {path}: it is not a regular file or a directory (a FIFO, socket or "
            "device). Read a regular file instead."
        )

    unsaved = ctx.editor.unsaved_text(path)
    # Small files are read on the spot: the thread hop would cost more than the read.
    small = info.st_size <= SMALL_FILE and (unsaved is None or len(unsaved) <= SMALL_FILE)
    run = _inline if small else ctx.run_blocking
    if unsaved is not None:
        content: Page | Media = await run(page_of_text, unsaved, offset, limit, ctx.abort)
    elif small and fd is not None and not ctx.people_asked:
        # Read on the spot, with no wait since the open: the fd is the file just checked.
        # After an ask (time for the file to be replaced) it is opened afresh below.
        content = read_page(path, offset, limit, ctx.abort, fd=fd)
    else:
        content = await run(read_page, path, offset, limit, ctx.abort, real)
    if isinstance(content, Media):
        return _media_result(Path(path), title, content)
    _check_in_range(content)
    _prewarm(ctx, path)
    ctx.session.record_read(path, info.st_mtime_ns)
    brought = instructions.collect(
        path, ctx.directory, ctx.session.instructions, ctx.editor.unsaved_text
    )
    return _file_result(path, title, content, brought)


async def _inline(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise ToolError(f"Cannot read {path}: {error.strerror or error}") from error


def _prewarm(ctx: ToolContext, path: str) -> None:
    # Best effort: a client that fails to warm its language servers must not fail the read.
    try:
        ctx.editor.prewarm(path)
    except Exception:
        log.exception("prewarm of %s failed", path)


def _check_in_range(page: Page) -> None:
    if page.count is None or page.count >= page.offset:
        return
    if page.count == 0 and page.offset == 1:  # an empty file's first page is fine
        return
    raise ToolError(f"Offset {page.offset} is out of range for this file ({page.count} lines)")


# --- results ----------------------------------------------------------------------------


def _file_result(
    path: str, title: str, page: Page, brought: list[instructions.Instruction]
) -> ToolResult:
    last = page.offset + len(page.lines) - 1
    numbered = _numbered(page.offset, page.lines)
    output = f"<path>{path}</path>\n<type>file</type>\n<content>\n{numbered}\n\n"
    output += _footer(page, last) + "\n</content>" + instructions.reminder(brought)
    return ToolResult(
        title=title,
        output=output,
        metadata={
            "preview": "\n".join(page.lines[:PREVIEW_LINES]),
            "truncated": page.more or page.cut,
            "loaded": [instruction.path for instruction in brought],
        },
    )


# "\n<n>: " for the line numbers of the first pages, built on the first long page (about
# 250 KB, half a millisecond: not at import, which the first call of a sidecar waits
# for): numbering a 2000-line page is then two slice assignments and one C-level join
# instead of 2000 string formats.
_PREFIXED = 4097
_SHORT_PAGE = 4  # lines: formatted one by one (a microsecond at most)


@cache
def _prefixes() -> list[str]:
    return [f"\n{n}: " for n in range(_PREFIXED)]


def _numbered(offset: int, lines: list[str]) -> str:
    """``<n>: <line>`` for each line, joined by newlines."""
    stop = offset + len(lines)
    if stop > _PREFIXED or len(lines) <= _SHORT_PAGE:
        return "\n".join(map("{}: {}".format, range(offset, stop), lines))
    parts = lines * 2  # the right length; every other item is replaced by a prefix
    parts[0::2] = _prefixes()[offset:stop]
    parts[1::2] = lines
    parts[0] = f"{offset}: "  # the first line has no newline before it
    return "".join(parts)


def _footer(page: Page, last: int) -> str:
    shown = f"Showing lines {page.offset}-{last}"
    resume = f"Use offset={last + 1} to continue."
    if page.cut:
        return f"(Output capped at {MAX_BYTES_LABEL}. {shown}. {resume})"
    if page.more and page.count is None:
        return f"({shown}. {resume})"
    if page.more:
        return f"({shown} of {page.count}. {resume})"
    return f"(End of file - total {page.count} lines)"


def _media_result(path: Path, title: str, media: Media) -> ToolResult:
    message = (
        "PDF read successfully" if media.mime == "application/pdf" else "Image read successfully"
    )
    url = f"data:{media.mime};base64,{base64.b64encode(media.data).decode('ascii')}"
    return ToolResult(
        title=title,
        output=message,
        metadata={"preview": message, "truncated": False, "loaded": []},
        attachments=[Attachment(media.mime, url, filename=path.name)],
    )


def _directory_result(
    path: Path, title: str, entries: list[str], offset: int, limit: int
) -> ToolResult:
    total = len(entries)
    if offset > total and not (total == 0 and offset == 1):
        raise ToolError(f"Offset {offset} is out of range for this directory ({total} entries)")
    start = offset - 1
    shown: list[str] = []
    used = 0
    for entry in entries[start : start + limit]:
        size = len(entry.encode("utf-8")) + (1 if shown else 0)
        if used + size > MAX_BYTES:
            break
        shown.append(entry)
        used += size
    truncated = start + len(shown) < total
    if truncated:
        footer = (
            f"\n(Showing {len(shown)} of {total} entries. "
            f"Use 'offset' parameter to read beyond entry {offset + len(shown)})"
        )
    else:
        footer = f"\n({total} entries)"
    output = "\n".join(
        [
            f"<path>{path}</path>",
            "<type>directory</type>",
            "<entries>",
            "\n".join(shown),
            footer,
            "</entries>",
        ]
    )
    return ToolResult(
        title=title,
        output=output,
        metadata={
            "preview": "\n".join(shown[:PREVIEW_LINES]),
            "truncated": truncated,
            "loaded": [],
        },
    )


# --- directories and near misses (run in a worker thread) ------------------------------


def _displayable(name: str) -> str:
    """A file name the wire can carry: undecodable bytes become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _sort_key(name: str) -> tuple[str, str]:
    return (name.casefold(), name)


def _not_found_message(path: Path) -> str:
    message = f"File not found: {path}"
    base = path.name.lower()
    try:
        names = sorted(os.listdir(path.parent), key=_sort_key)
    except OSError:
        return message
    similar = [
        os.path.join(path.parent, _displayable(name))
        for name in names
        if base in name.lower() or name.lower() in base
    ][:MAX_SUGGESTIONS]
    if not similar:
        return message
    return message + "\n\nDid you mean one of these?\n" + "\n".join(similar)


def _list_directory(path: Path, real: Path, abort: AbortSignal) -> list[str]:
    entries: list[str] = []
    try:
        fd = dirfd.open_dir(real)  # the folder that was checked, not whatever is there now
        try:
            with os.scandir(fd) as scan:
                for index, entry in enumerate(scan):
                    if index % ABORT_EVERY_LINES == 0:
                        abort.check()
                    name = _displayable(entry.name)
                    entries.append(name + "/" if _is_dir(entry) else name)
        finally:
            os.close(fd)
    except OSError as error:
        raise ToolError(f"Cannot list directory {path}: {error.strerror or error}") from error
    entries.sort(key=_sort_key)
    return entries


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks: a link to a directory lists as one
    except OSError:
        return False


tool = define(
    "read",
    parameters=ReadParams,
    execute=execute,
    kind="read",
    annotations=Annotations(read_only=True, idempotent=True),
    eager=True,  # a small file is read on the spot: most reads never wait
)
