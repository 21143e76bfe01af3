"""File I/O: text files that round-trip (encoding, BOM, line endings, mode) with atomic
writes (``text``), and pages of a file's lines streamed from disk (``pages``), all through
directory fds that never follow a symlink swapped in after a check (``dirfd``).

Each name below is imported when it is first asked for (PEP 562): a module that needs
only ``tools.fsio.paths`` does not load ctypes and the page reader with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Where each exported name lives.
_EXPORTS = {
    "ABORT_EVERY_LINES": "tools.fsio.pages",
    "MAX_BYTES": "tools.fsio.pages",
    "MAX_LINE_LENGTH": "tools.fsio.pages",
    "Media": "tools.fsio.pages",
    "Page": "tools.fsio.pages",
    "PathChanged": "tools.fsio.dirfd",
    "TextFile": "tools.fsio.text",
    "atomic_write": "tools.fsio.text",
    "decode": "tools.fsio.text",
    "page_of_text": "tools.fsio.pages",
    "read_page": "tools.fsio.pages",
    "read_text": "tools.fsio.text",
    "resolved": "tools.fsio.text",
    "to_line_endings": "tools.fsio.text",
    "writable": "tools.fsio.text",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # a submodule (``from tools.fsio import dirfd``) is imported then
        raise AttributeError(f"module 'tools.fsio' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *globals()})
