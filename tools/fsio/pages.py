"""A page of a text file's lines, streamed: the first page of a 1 GB file costs what it
costs for a 1 MB file.

Only the lines up to the requested page are scanned (newlines counted in chunks),
and each line keeps at most its first ``MAX_LINE_LENGTH`` characters in memory, so a
file that is one 500 MB line is cheap too.  Media is recognised by its magic bytes
and returned whole (up to ``MAX_MEDIA_BYTES``); binary files are refused.

Lines end at ``\\n`` (a ``\\r`` before it is dropped), so line numbers agree with
ripgrep.  Text is UTF-8 (a UTF-8 BOM is dropped); when the first 4 KiB are not valid
UTF-8 the file is read as latin-1, as ``tools.fsio.text`` reads it for edits.

Blocking: run in a worker thread (``ctx.run_blocking``), with the call's abort signal.
"""

from __future__ import annotations

import bisect
import codecs
import os
import stat
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO

from tools.abort import AbortSignal
from tools.errors import ToolError
from tools.fsio import dirfd
from tools.fsio.text import resolved

MAX_LINE_LENGTH = 2000
LINE_SUFFIX = f"... (line truncated to {MAX_LINE_LENGTH} chars)"
MAX_BYTES = 50 * 1024
MAX_MEDIA_BYTES = 20 * 1024 * 1024
SAMPLE_BYTES = 4096
COUNT_CAP = 8 * 1024 * 1024  # bytes after the page we are willing to scan for the total
CHUNK_BYTES = 1024 * 1024
WHOLE_FILE_BYTES = 256 * 1024  # read whole, then paged from memory
# A UTF-8 character is at most 4 bytes, so this many bytes always decode to more than
# MAX_LINE_LENGTH characters: enough to show a cut line without holding all of it.
HEAD_BYTES = (MAX_LINE_LENGTH + 1) * 4
ABORT_EVERY_LINES = 4096

BINARY_EXTENSIONS = frozenset(
    {
        *(".zip", ".tar", ".gz", ".7z", ".jar", ".war", ".class", ".wasm", ".pyc", ".pyo"),
        *(".exe", ".dll", ".so", ".bin", ".dat", ".obj", ".o", ".a", ".lib"),
        *(".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp"),
    }
)
MEDIA_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")  # looked up once, not per read
# Bytes 0-8 and 14-31: control characters that do not occur in text (tab..CR are 9-13).
_CONTROL = bytes(range(9)) + bytes(range(14, 32))


@dataclass(frozen=True)
class Page:
    offset: int
    lines: list[str]
    count: int | None  # total lines in the file; None when counting them would cost too much
    more: bool  # lines remain after this page
    cut: bool  # the page stopped at the byte budget


@dataclass(frozen=True)
class Media:
    mime: str
    data: bytes


class _PageBuilder:
    """Collects display lines until the line limit or the byte budget is reached."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lines: list[str] = []
        self.bytes = 0

    @property
    def full(self) -> bool:
        return len(self.lines) >= self.limit

    def add(self, text: str) -> bool:
        """Add one line; False (and nothing added) when it would exceed the byte budget."""
        if len(text) > MAX_LINE_LENGTH:
            text = text[:MAX_LINE_LENGTH] + LINE_SUFFIX
        size = len(text.encode("utf-8", "surrogatepass")) + (1 if self.lines else 0)
        if self.bytes + size > MAX_BYTES:
            return False
        self.lines.append(text)
        self.bytes += size
        return True


def read_page(
    path: Path | str,
    offset: int,
    limit: int,
    abort: AbortSignal,
    real: Path | str | None = None,
    *,
    fd: int | None = None,
) -> Page | Media:
    """``real``: where ``path`` was checked to be; it is opened through directory fds
    (``dirfd``), so a symlink swapped in after the check is refused, not followed.
    ``fd``: the file already open for reading, at its start, instead (left open).

    A small file is read whole in one system call and paged from memory; a larger one
    is streamed (a buffered file costs a system call per ``tell`` and ``read``, more
    than the read itself for most source files)."""
    try:
        if fd is not None:
            return _page_of_fd(fd, path, offset, limit, abort, close=False)
        opened = dirfd.open_file(real or resolved(Path(path)), os.O_RDONLY | os.O_NONBLOCK)
        return _page_of_fd(opened, path, offset, limit, abort, close=True)
    except OSError as error:
        raise ToolError(f"Cannot read {path}: {error.strerror or error}") from error


def _page_of_fd(
    fd: int, path: Path | str, offset: int, limit: int, abort: AbortSignal, *, close: bool
) -> Page | Media:
    try:
        size = _regular_size(fd, path)
        whole = _whole_file(fd, size)
    except BaseException:
        if close:
            os.close(fd)
        raise
    if whole is not None:
        if close:
            os.close(fd)
        return _page_of_whole(whole, path, offset, limit, abort)
    with os.fdopen(fd, "rb", closefd=close) as handle:
        return _page_of_file(handle, size, path, offset, limit, abort)


def _regular_size(fd: int, path: Path | str) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # swapped for a FIFO or device
        raise ToolError(f"Cannot read {path}: it is not a regular file")
    return info.st_size


def _whole_file(fd: int, size: int) -> bytes | None:
    """All of a file of at most ``WHOLE_FILE_BYTES``; None for a larger one (or one that
    holds more than its size says, as /proc files do), left at its start."""
    if size > WHOLE_FILE_BYTES:
        return None
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    os.lseek(fd, 0, os.SEEK_SET)
    return None


def _page_of_whole(
    data: bytes, path: Path | str, offset: int, limit: int, abort: AbortSignal
) -> Page | Media:
    abort.check()  # once: what follows is a few C-level passes over at most 256 KiB
    sample = data[:SAMPLE_BYTES]
    media = _media_type(sample, path, len(data))
    if media:
        return Media(media, data)
    encoding, start = _text_encoding(sample)
    return _page_of_bytes(data[start:] if start else data, encoding, offset, limit)


def _page_of_file(
    handle: BinaryIO, size: int, path: Path | str, offset: int, limit: int, abort: AbortSignal
) -> Page | Media:
    sample = handle.read(SAMPLE_BYTES)
    media = _media_type(sample, path, size)
    if media:
        handle.seek(0)
        data = handle.read(MAX_MEDIA_BYTES + 1)
        if len(data) > MAX_MEDIA_BYTES:  # it grew since the stat
            raise _media_too_large(path)
        return Media(media, data)
    encoding, start = _text_encoding(sample)
    handle.seek(start)
    return _page_of_stream(handle, size, encoding, offset, limit, abort)


def _media_type(sample: bytes, path: Path | str, size: int) -> str | None:
    """The media type of a file that starts with ``sample``, or None for text; binary
    files and media past the cap are refused."""
    sniffed = _sniff(sample)
    suffix = os.path.splitext(path)[1].lower()  # not Path.suffix: read's hot path
    if (sniffed or suffix in MEDIA_EXTENSIONS) and size > MAX_MEDIA_BYTES:
        raise _media_too_large(path)
    if sniffed:
        return sniffed
    if _is_binary(suffix, sample):
        raise ToolError(f"Cannot read binary file: {path}")
    return None


def _media_too_large(path: Path | str) -> ToolError:
    return ToolError(f"Media exceeds {MAX_MEDIA_BYTES} byte ingestion limit: {path}")


def _sniff(head: bytes) -> str | None:
    """The media type announced by the content's magic bytes, whatever the file's name."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def _is_binary(suffix: str, sample: bytes) -> bool:
    if suffix in BINARY_EXTENSIONS:
        return True
    if not sample:
        return False
    if b"\0" in sample:
        return True
    control = len(sample) - len(sample.translate(None, _CONTROL))
    return control / len(sample) > 0.3


def _text_encoding(sample: bytes) -> tuple[str, int]:
    """The encoding to decode lines with, and where the text starts (after a BOM)."""
    if sample.startswith(codecs.BOM_UTF8):
        return "utf-8", len(codecs.BOM_UTF8)
    try:
        sample.decode("utf-8")  # most samples: valid to the end, no decoder object needed
    except UnicodeDecodeError:
        try:
            # final=False: the sample may end inside a multi-byte character.
            _UTF8_DECODER().decode(sample, final=False)
        except UnicodeDecodeError:
            return "latin-1", 0
    return "utf-8", 0


def _page_of_bytes(data: bytes, encoding: str, offset: int, limit: int) -> Page:
    """The page of a file held whole (its text after any BOM): the lines, total and
    flags the streamed page has, from a few C-level counts and splits."""
    total = data.count(b"\n")
    if data and not data.endswith(b"\n"):
        total += 1  # the last line has no line break
    before = offset - 1
    if before >= total:
        return Page(offset, [], count=total, more=False, cut=False)
    if before:
        data = data.split(b"\n", before)[-1]
    taken = min(limit, total - before)
    more = taken < total - before
    if more:  # drop the lines after the page, and the line break before them
        data = data[: len(data) - len(data.split(b"\n", taken)[-1]) - 1]
    elif data.endswith(b"\n"):
        data = data[:-1]
    texts, bounds = _display(data, taken, encoding)
    fit = bounds.fitting(MAX_BYTES)
    if fit < len(texts):  # the byte budget ends the page
        return Page(offset, texts[:fit], count=None, more=True, cut=True)
    return Page(offset, texts, count=total, more=more, cut=False)


def _page_of_stream(
    handle: BinaryIO, size: int, encoding: str, offset: int, limit: int, abort: AbortSignal
) -> Page:
    """The page, a chunk at a time: the wanted lines of each chunk are decoded, split,
    cut and sized by C-level operations on the whole block, never one Python step per
    line, and the bytes past the page are never split at all."""
    skipped = _skip_lines(handle, offset - 1, abort)
    if skipped < offset - 1:
        return Page(offset, [], count=skipped, more=False, cut=False)
    lines: list[str] = []
    used = 0  # bytes of the page so far, joining newlines included
    count = skipped
    pending = b""  # the start of a line whose end has not been read yet
    while True:
        abort.check()
        base = handle.tell() - len(pending)  # where ``pending`` starts in the file
        chunk = handle.read(CHUNK_BYTES)
        if not chunk and not pending:
            return Page(offset, lines, count=count, more=False, cut=False)
        need = limit - len(lines)
        block, taken, end, pending, after_long = _wanted_lines(pending, chunk, need, handle, abort)
        at_eof = not chunk
        texts, bounds = _display(block, taken, encoding)
        room = MAX_BYTES - used - (1 if lines else 0)
        fit = bounds.fitting(room)
        if fit < len(texts):  # the byte budget ends the page
            lines += texts[:fit]
            return Page(offset, lines, count=None, more=True, cut=True)
        if texts:
            used += bounds.total + (1 if lines else 0)
            lines += texts
        count += taken
        if len(lines) >= limit:
            if at_eof:
                return Page(offset, lines, count=count, more=False, cut=False)
            handle.seek(after_long if after_long is not None else base + end)
            rest = _count_rest(handle, size, abort)
            total = None if rest is None else count + rest
            more = rest is None or rest > 0
            return Page(offset, lines, count=total, more=more, cut=False)
        if at_eof:
            return Page(offset, lines, count=count, more=False, cut=False)


def _wanted_lines(
    pending: bytes, chunk: bytes, need: int, handle: BinaryIO, abort: AbortSignal
) -> tuple[bytes, int, int, bytes, int | None]:
    """Up to ``need`` lines from ``pending + chunk``, as one block of bytes joined by
    newlines: ``(block, how many lines, where the data after them starts, the new
    pending bytes, where the file goes on after a cut long line or None)``."""
    data = pending + chunk if pending else chunk
    if not chunk:  # the last line, without a line break
        return data, 1, len(data), b"", None
    newlines = data.count(b"\n")
    if newlines > need:  # the page ends inside this data: split only as far as it
        rest = data.split(b"\n", need)[-1]
        end = len(data) - len(rest)
        return data[: end - 1], need, end, rest, None
    end = data.rfind(b"\n") + 1  # 0 when there is no newline at all
    block, rest = data[: max(end - 1, 0)], data[end:]
    if newlines < need and len(rest) >= HEAD_BYTES:
        # A long line the page reaches: keep its head, read past the rest.
        _skip_rest_of_line(handle, abort)
        head = rest[:HEAD_BYTES]
        block = block + b"\n" + head if newlines else head
        return block, newlines + 1, end, b"", handle.tell()
    return block, newlines, end, rest, None


def _display(block: bytes, taken: int, encoding: str) -> tuple[list[str], _Bounds]:
    """The ``taken`` lines of ``block`` as shown (``\r`` dropped, long ones cut), and the
    bytes the first k of them take joined by newlines (``_Bounds``)."""
    if not taken:
        return [], _Bounds([], "")
    text = block.decode(encoding, "replace")  # no invalid sequence spans a \n
    lines = text.split("\n")
    changed = False
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        changed = True
    if len(text) > MAX_LINE_LENGTH and max(map(len, lines)) > MAX_LINE_LENGTH:
        lines = [
            line[:MAX_LINE_LENGTH] + LINE_SUFFIX if len(line) > MAX_LINE_LENGTH else line
            for line in lines
        ]
        changed = True
    return lines, _Bounds(lines, "" if changed else text)


class _Bounds:
    """How many bytes the first k lines take, joined by newlines, computed only as far
    as needed: usually the whole batch fits and one length answers."""

    def __init__(self, lines: list[str], joined: str) -> None:
        self.lines = lines
        if not lines:
            self.total = 0
        elif joined and joined.isascii():
            self.total = len(joined)
        else:
            self.total = len("\n".join(lines).encode("utf-8", "surrogatepass"))
        self._prefix: list[int] | None = None

    def fitting(self, room: int) -> int:
        """The most lines (from the first) that take at most ``room`` bytes."""
        if self.total <= room:
            return len(self.lines)
        if self._prefix is None:
            sizes = accumulate(len(line.encode("utf-8", "surrogatepass")) for line in self.lines)
            self._prefix = [total + k for k, total in enumerate(sizes)]
        return bisect.bisect_right(self._prefix, room)


def _skip_rest_of_line(handle: BinaryIO, abort: AbortSignal) -> None:
    """Read past the end of the current line, a chunk at a time."""
    while True:
        abort.check()
        rest = handle.readline(CHUNK_BYTES)
        if not rest or rest.endswith(b"\n"):
            return


def _skip_lines(handle: BinaryIO, wanted: int, abort: AbortSignal) -> int:
    """Move past ``wanted`` lines; return how many there were (fewer at end of file)."""
    seen = 0
    partial = False  # the last chunk ended inside a line
    while seen < wanted:
        abort.check()
        start = handle.tell()
        chunk = handle.read(CHUNK_BYTES)
        if not chunk:
            return seen + (1 if partial else 0)
        newlines = chunk.count(b"\n")
        if seen + newlines >= wanted:
            tail = chunk.split(b"\n", wanted - seen)[-1]
            handle.seek(start + len(chunk) - len(tail))
            return wanted
        seen += newlines
        partial = not chunk.endswith(b"\n")
    return seen


def _count_rest(handle: BinaryIO, size: int, abort: AbortSignal) -> int | None:
    """Lines from the current position (a line start) to the end; None past ``COUNT_CAP``.

    ``size``: the file's size when it was opened (a file that grew since is caught by
    counting past the cap)."""
    if size - handle.tell() > COUNT_CAP:
        return None
    newlines = scanned = 0
    last = b""
    while chunk := handle.read(CHUNK_BYTES):
        abort.check()
        scanned += len(chunk)
        if scanned > COUNT_CAP:  # the file grew, or its size was not known (/proc)
            return None
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return newlines + (1 if last and last != b"\n" else 0)


def page_of_text(text: str, offset: int, limit: int, abort: AbortSignal) -> Page:
    """A page of an editor buffer, split the same way as a file on disk."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # text ending in a newline has no extra empty line
    total = len(lines)
    page = _PageBuilder(limit)
    for index in range(offset - 1, total):
        if index % ABORT_EVERY_LINES == 0:
            abort.check()
        if page.full:
            return Page(offset, page.lines, count=total, more=True, cut=False)
        if not page.add(lines[index].removesuffix("\r")):
            return Page(offset, page.lines, count=total, more=True, cut=True)
    return Page(offset, page.lines, count=total, more=False, cut=False)
