"""The apply_patch format: parser and line matcher (reference §6.5).

Ported from OpenCode's ``patch/index.ts`` (itself a port of Codex's Rust
``apply-patch``).  Everything here is pure: text in, hunks or text out.  Reading
files, permissions and writing belong to ``tools/builtin/apply_patch.py``.

Where OpenCode leans on JavaScript semantics (``String.prototype.trim``, ``\\w``,
``$``) the same semantics are spelled out here so a patch matches exactly where
it matches in OpenCode.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "AddHunk",
    "DeleteHunk",
    "Hunk",
    "PatchApplyError",
    "PatchError",
    "PatchParseError",
    "UpdateChunk",
    "UpdateHunk",
    "add_file_text",
    "derive_new_contents",
    "is_empty_patch",
    "parse_patch",
    "seek_sequence",
    "strip_heredoc",
]

BEGIN_MARKER = "*** Begin Patch"
END_MARKER = "*** End Patch"
ADD_FILE = "*** Add File:"
DELETE_FILE = "*** Delete File:"
UPDATE_FILE = "*** Update File:"
MOVE_TO = "*** Move to:"
END_OF_FILE = "*** End of File"

# What JavaScript's trim() removes (WhiteSpace + LineTerminator): Python's strip()
# also removes \x1c-\x1f and \x85 but keeps U+FEFF, so matching would differ.
_JS_WHITESPACE = (
    "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_HEREDOC = re.compile(r"^(?:cat\s+)?<<['\"]?([A-Za-z0-9_]+)['\"]?\s*\n([\s\S]*?)\n\1\s*\Z")

# Typographic punctuation a model tends to type as ASCII (and vice versa).
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015", "-"),
        "\u2026": "...",
        "\xa0": " ",
    }
)


class PatchError(ValueError):
    """A patch that cannot be parsed or applied; ``str()`` is OpenCode's message."""


class PatchParseError(PatchError):
    pass


class PatchApplyError(PatchError):
    pass


@dataclass(frozen=True)
class UpdateChunk:
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    context: str | None = None  # the text after "@@", seeked before old_lines
    end_of_file: bool = False  # "*** End of File": try the file's end first


@dataclass(frozen=True)
class AddHunk:
    path: str
    contents: str  # the "+" lines joined by "\n", without a final newline


@dataclass(frozen=True)
class DeleteHunk:
    path: str


@dataclass(frozen=True)
class UpdateHunk:
    path: str
    move_path: str | None = None
    chunks: list[UpdateChunk] = field(default_factory=list)


Hunk = AddHunk | DeleteHunk | UpdateHunk


def js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------


def strip_heredoc(text: str) -> str:
    """The body of ``[cat ]<<'TAG'\\n...\\nTAG``, or ``text`` unchanged."""
    match = _HEREDOC.match(text)
    return match.group(2) if match else text


def is_empty_patch(text: str) -> bool:
    """Exactly the two markers and nothing else: rejected as empty, not as unparsable."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    return js_trim(normalised) == f"{BEGIN_MARKER}\n{END_MARKER}"


def parse_patch(text: str) -> list[Hunk]:
    """The hunks between the Begin/End markers, in order.

    CRLF in the patch is read as LF (a deliberate difference from OpenCode, which
    would carry the stray ``\\r`` into the new lines). Lines that are not headers
    are skipped, so prose around or between sections is harmless.
    """
    cleaned = strip_heredoc(js_trim(text.replace("\r\n", "\n")))
    lines = cleaned.split("\n")
    begin = _index_of(lines, BEGIN_MARKER)
    end = _index_of(lines, END_MARKER)
    if begin == -1 or end == -1 or begin >= end:
        raise PatchParseError("Invalid patch format: missing Begin/End markers")

    hunks: list[Hunk] = []
    i = begin + 1
    while i < end:
        line = lines[i]
        if line.startswith(ADD_FILE) and (path := js_trim(line[len(ADD_FILE) :])):
            contents, i = _parse_add(lines, i + 1, end)
            hunks.append(AddHunk(path, contents))
        elif line.startswith(DELETE_FILE) and (path := js_trim(line[len(DELETE_FILE) :])):
            hunks.append(DeleteHunk(path))
            i += 1
        elif line.startswith(UPDATE_FILE) and (path := js_trim(line[len(UPDATE_FILE) :])):
            i += 1
            move_path = None
            if i < end and lines[i].startswith(MOVE_TO):
                move_path = js_trim(lines[i][len(MOVE_TO) :]) or None
                i += 1
            chunks, i = _parse_chunks(lines, i, end)
            hunks.append(UpdateHunk(path, move_path, chunks))
        else:
            i += 1
    return hunks


def _index_of(lines: list[str], marker: str) -> int:
    return next((k for k, line in enumerate(lines) if js_trim(line) == marker), -1)


def _parse_add(lines: list[str], i: int, end: int) -> tuple[str, int]:
    collected: list[str] = []
    while i < end and not lines[i].startswith("***"):
        if lines[i].startswith("+"):
            collected.append(lines[i][1:])
        i += 1
    return "\n".join(collected), i


def _parse_chunks(lines: list[str], i: int, end: int) -> tuple[list[UpdateChunk], int]:
    chunks: list[UpdateChunk] = []
    while i < end and not lines[i].startswith("***"):
        if not lines[i].startswith("@@"):
            i += 1  # text before the first "@@" is ignored
            continue
        context = js_trim(lines[i][2:]) or None
        i += 1
        old: list[str] = []
        new: list[str] = []
        end_of_file = False
        while i < end and not lines[i].startswith("@@"):
            line = lines[i]
            # OpenCode tests for this marker after its loop has already stopped at
            # "***", so it never takes effect there; here it anchors the chunk.
            if line == END_OF_FILE:
                end_of_file = True
                i += 1
                break
            if line.startswith("***"):
                break
            if line.startswith(" "):
                old.append(line[1:])
                new.append(line[1:])
            elif line.startswith("-"):
                old.append(line[1:])
            elif line.startswith("+"):
                new.append(line[1:])
            i += 1
        chunks.append(UpdateChunk(old, new, context, end_of_file))
    return chunks, i


def add_file_text(hunk: AddHunk) -> str:
    """An added file's text: its lines, ending with a newline unless it is empty."""
    contents = hunk.contents
    return contents if not contents or contents.endswith("\n") else contents + "\n"


# --------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------

Normaliser = Callable[[str], str]


def _fold_punctuation(line: str) -> str:
    return js_trim(line).translate(_PUNCTUATION)


# Each pass is more lenient than the one before; the first pass that matches wins.
_PASSES: tuple[Normaliser | None, ...] = (None, js_trim_end, js_trim, _fold_punctuation)


class _Lines:
    """A file's lines with each pass's normalised form computed once, on demand."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._views: dict[int, list[str]] = {}

    def view(self, index: int) -> list[str]:
        normalise = _PASSES[index]
        if normalise is None:
            return self.lines
        if index not in self._views:
            self._views[index] = [normalise(line) for line in self.lines]
        return self._views[index]


def seek_sequence(
    lines: list[str] | _Lines, pattern: list[str], start: int, eof: bool = False
) -> int:
    """Index where ``pattern`` occurs in ``lines`` at or after ``start``, or -1.

    Four passes: exact, trailing whitespace ignored, both ends trimmed, trimmed
    with typographic punctuation folded to ASCII. With ``eof`` each pass tries
    the very end of the file before searching forward.
    """
    source = lines if isinstance(lines, _Lines) else _Lines(lines)
    if not pattern:
        return -1
    for index, normalise in enumerate(_PASSES):
        wanted = pattern if normalise is None else [normalise(p) for p in pattern]
        found = _find(source.view(index), wanted, start, eof)
        if found != -1:
            return found
    return -1


def _find(lines: list[str], pattern: list[str], start: int, eof: bool) -> int:
    size = len(pattern)
    if eof:
        at_end = len(lines) - size
        if at_end >= start and lines[at_end : at_end + size] == pattern:
            return at_end
    first = pattern[0]
    for i in range(max(start, 0), len(lines) - size + 1):
        if lines[i] == first and lines[i : i + size] == pattern:
            return i
    return -1


# --------------------------------------------------------------------------
# Applying an update
# --------------------------------------------------------------------------

Replacement = tuple[int, int, list[str]]  # (start line, old line count, new lines)


def derive_new_contents(path: str, chunks: list[UpdateChunk], text: str) -> str:
    """The file's text after ``chunks`` (OpenCode's ``deriveNewContentsFromChunks``).

    ``text`` must use "\\n" line endings; ``path`` only appears in error messages.
    The result always ends with a newline unless it is empty.
    """
    lines = text.split("\n")
    had_final_newline = lines[-1] == ""
    if had_final_newline:
        lines.pop()
    replacements = _compute_replacements(lines, path, chunks)
    result = _apply_replacements(lines, replacements)
    # Restore the final newline even when the last content line is blank.
    if had_final_newline or not result or result[-1] != "":
        result.append("")
    return "\n".join(result)


def _compute_replacements(
    lines: list[str], path: str, chunks: list[UpdateChunk]
) -> list[Replacement]:
    source = _Lines(lines)
    replacements: list[Replacement] = []
    cursor = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = seek_sequence(source, [chunk.context], cursor)
            if found == -1:
                raise PatchApplyError(f"Failed to find context '{chunk.context}' in {path}")
            cursor = found + 1

        if not chunk.old_lines:
            # A pure insertion goes at the end of the file, whatever the context.
            replacements.append((len(lines), 0, chunk.new_lines))
            continue

        pattern, new = chunk.old_lines, chunk.new_lines
        found = seek_sequence(source, pattern, cursor, chunk.end_of_file)
        if found == -1 and pattern[-1] == "":
            # A trailing blank context line often stands for the file's final newline.
            pattern = pattern[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = seek_sequence(source, pattern, cursor, chunk.end_of_file)
        if found == -1:
            expected = "\n".join(chunk.old_lines)
            raise PatchApplyError(f"Failed to find expected lines in {path}:\n{expected}")
        replacements.append((found, len(pattern), new))
        cursor = found + len(pattern)

    replacements.sort(key=lambda r: r[0])  # stable: insertions at EOF keep chunk order
    return replacements


def _apply_replacements(lines: list[str], replacements: list[Replacement]) -> list[str]:
    result = list(lines)
    # Bottom-up, so earlier indices stay valid.
    for start, count, new in reversed(replacements):
        result[start : start + count] = new
    return result
