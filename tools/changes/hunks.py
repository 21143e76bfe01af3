"""A file change cut into hunks that a person can take or leave one by one.

The hunks are exactly those of the unified diff the review shows (``diff_texts``
with three lines of context), so a hunk id names what the person saw.  Applying a
subset puts each accepted hunk's new lines over its old ones and leaves the other
old lines as they were; the hunks never overlap, so the order does not matter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tools.changes.line_match import split_lines

HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_EOL = "\\ No newline at end of file"


@dataclass(frozen=True)
class Hunk:
    id: str  # "<relative path>#<n>", n from 1, stable within one ask
    file: str  # relative path
    header: str  # the "@@ -a,b +c,d @@" line
    lines: tuple[str, ...]  # the body: " ", "-" and "+" lines (and "\ No newline" markers)
    old_start: int  # 0-based index of the first old line it replaces
    old: tuple[str, ...]  # the old lines it covers, with their line ends
    new: tuple[str, ...]  # the lines that replace them

    def to_wire(self) -> dict[str, object]:
        return {"id": self.id, "file": self.file, "header": self.header, "lines": list(self.lines)}

    @property
    def new_start(self) -> int:
        """1-based first line of the hunk in the new text (its header's ``+c``)."""
        match = HEADER.match(self.header)
        return int(match[3]) if match else self.old_start + 1


def parse_hunks(file: str, unified: str) -> list[Hunk]:
    """The hunks of one file's unified diff text (headers before the first ``@@`` skipped)."""
    hunks: list[Hunk] = []
    body: list[str] = []
    header = ""

    def close() -> None:
        if header:
            hunks.append(_hunk(file, len(hunks) + 1, header, body))

    for line in unified.split("\n"):
        if line.startswith("@@"):
            close()
            header, body = line, []
        elif header and line:
            body.append(line)
    close()
    return hunks


def _hunk(file: str, number: int, header: str, body: list[str]) -> Hunk:
    match = HEADER.match(header)
    if match is None:
        raise ValueError(f"not a hunk header: {header!r}")
    start, count = int(match[1]), int(match[2]) if match[2] is not None else 1
    old: list[str] = []
    new: list[str] = []
    last: list[list[str]] = []  # the side(s) the previous line went to
    for line in body:
        if line == NO_EOL:  # the line before it has no line end
            for side in last:
                side[-1] = side[-1].removesuffix("\n")
            continue
        kind, text = line[:1], line[1:] + "\n"
        last = [old, new] if kind == " " else [old] if kind == "-" else [new]
        for side in last:
            side.append(text)
    old_start = start if count == 0 else start - 1
    return Hunk(f"{file}#{number}", file, header, tuple(body), old_start, tuple(old), tuple(new))


def apply_hunks(old_text: str, hunks: Iterable[Hunk]) -> str:
    """``old_text`` with the new lines of ``hunks`` (some of one file's hunks) put in."""
    lines = split_lines(old_text)
    for hunk in sorted(hunks, key=lambda h: h.old_start, reverse=True):
        end = hunk.old_start + len(hunk.old)
        if tuple(lines[hunk.old_start : end]) != hunk.old:
            raise ValueError(f"hunk {hunk.id} does not fit the text it was made from")
        lines[hunk.old_start : end] = hunk.new
    return "".join(lines)
