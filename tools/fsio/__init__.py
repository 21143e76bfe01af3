"""File I/O: text files that round-trip (encoding, BOM, line endings, mode) with atomic
writes (``text``), and pages of a file's lines streamed from disk (``pages``), all through
directory fds that never follow a symlink swapped in after a check (``dirfd``)."""

from tools.fsio.dirfd import PathChanged
from tools.fsio.pages import (
    ABORT_EVERY_LINES,
    MAX_BYTES,
    MAX_LINE_LENGTH,
    Media,
    Page,
    page_of_text,
    read_page,
)
from tools.fsio.text import (
    TextFile,
    atomic_write,
    decode,
    read_text,
    resolved,
    to_line_endings,
    writable,
)

__all__ = [
    "ABORT_EVERY_LINES",
    "MAX_BYTES",
    "MAX_LINE_LENGTH",
    "Media",
    "Page",
    "PathChanged",
    "TextFile",
    "atomic_write",
    "decode",
    "page_of_text",
    "read_page",
    "read_text",
    "resolved",
    "to_line_endings",
    "writable",
]
