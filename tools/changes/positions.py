"""LSP positions over plain text: units in the negotiated encoding, line starts, offsets.

LSP counts a line's characters in the position encoding both ends agreed on
(UTF-16 by default) and ends lines at ``\\r\\n``, ``\\r`` and ``\\n``; Python counts code
points and the diff splits on ``\\n``.  This module converts between the two, and
applies TextEdits with the spec's position semantics.  Plain dicts, no LSP library.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Literal

__all__ = [
    "PositionEncoding",
    "apply_text_edits",
    "has_lone_cr",
    "lsp_line_starts",
    "position_units",
]

PositionEncoding = Literal["utf-16", "utf-8", "utf-32"]

# LSP treats \r\n, \r and \n as line terminators; "\n"-split lines only agree
# with that when no bare \r is present.
_LONE_CR = re.compile(r"\r(?!\n)")
_LSP_EOL = re.compile(r"\r\n|\r|\n")


def position_units(s: str, encoding: PositionEncoding) -> int:
    """How many position units (the negotiated LSP encoding) ``s`` spans."""
    if encoding == "utf-32" or s.isascii():
        return len(s)
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s.encode("utf-8"))


def has_lone_cr(text: str) -> bool:
    """Whether ``text`` has a bare ``\\r``: then its LSP lines are not its "\\n" lines."""
    return "\r" in text and _LONE_CR.search(text) is not None


def lsp_line_starts(text: str) -> list[int]:
    """Offsets where LSP lines begin (\\r\\n, \\r and \\n all terminate a line)."""
    if "\r" not in text:
        starts = [0]
        starts.extend(accumulate(len(p) + 1 for p in text.split("\n")[:-1]))
        return starts
    starts = [0]
    starts.extend(m.end() for m in _LSP_EOL.finditer(text))
    return starts


def apply_text_edits(
    text: str, edits: Sequence[dict[str, Any]], *, position_encoding: PositionEncoding = "utf-16"
) -> str:
    """Apply LSP TextEdits to ``text`` with LSP position semantics.

    Out-of-range characters clamp to the line end and out-of-range lines to the
    document end, as the spec asks of clients. Edits must not overlap; inserts
    at the same position apply in array order.
    """
    if not edits:
        return text
    starts = lsp_line_starts(text)
    nlines = len(starts)

    def offset(p: dict[str, Any]) -> int:
        line, character = int(p["line"]), int(p["character"])
        if line < 0 or character < 0:
            raise ValueError(f"negative position: {p!r}")
        if line >= nlines:
            return len(text)
        begin = starts[line]
        if line + 1 == nlines:
            end = len(text)
        else:
            end = starts[line + 1]
            end -= 2 if end - 2 >= begin and text[end - 2 : end] == "\r\n" else 1
        seg = text[begin:end]
        if position_encoding == "utf-32" or seg.isascii():
            return begin + min(character, len(seg))
        units = 0
        for k, ch in enumerate(seg):
            if units >= character:
                return begin + k
            units += position_units(ch, position_encoding)
        return end

    spans = []
    for edit in edits:
        rng = edit["range"]
        s, e = offset(rng["start"]), offset(rng["end"])
        if e < s:
            raise ValueError(f"edit range ends before it starts: {rng!r}")
        spans.append((s, e, str(edit["newText"])))
    spans.sort(key=lambda t: (t[0], t[1]))  # stable: same-position inserts keep order

    pieces: list[str] = []
    cursor = 0
    for s, e, new_text in spans:
        if s < cursor:
            raise ValueError("overlapping text edits")
        pieces.append(text[cursor:s])
        pieces.append(new_text)
        cursor = e
    pieces.append(text[cursor:])
    return "".join(pieces)
