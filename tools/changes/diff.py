"""Git-style unified diffs of one file: ``diff_texts`` (text, counts, LSP edits), ``trim_diff``,
``rename_diff`` (a move).

Pure and LSP-library free: protocol shapes are plain dicts so the tool layer stays
importable without pygls/lsprotocol.  Only the lines around the change are split
and matched (``line_match``): the common prefix and suffix are skipped at C speed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tools.changes.line_match import Opcode, line_opcodes, split_lines
from tools.changes.positions import PositionEncoding, has_lone_cr
from tools.changes.workspace_edit import text_edits
from tools.fsio.paths import visible

__all__ = ["FileDiff", "diff_texts", "rename_diff", "trim_diff"]

_NO_EOL = "\\ No newline at end of file\n"
_FILE_MODE = "100644"


@dataclass(frozen=True)
class FileDiff:
    path: str  # worktree-relative, forward slashes
    unified: str  # git-style unified diff text ("" when no change)
    additions: int
    deletions: int
    edits: list[dict[str, Any]]  # LSP TextEdits against the OLD text


def _format_range(start: int, stop: int) -> str:
    # Same convention as difflib/GNU diff: ",1" omitted, empty range names the
    # line before it.
    beginning = start + 1
    length = stop - start
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _grouped(codes: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """Hunks with ``n`` lines of context; mirrors SequenceMatcher.get_grouped_opcodes."""
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _emit(out: list[str], prefix: str, lines: Sequence[str]) -> None:
    for line in lines:
        out.append(prefix + line)
        if not line.endswith("\n"):
            out.append("\n" + _NO_EOL)


def _hunks(
    a: Sequence[str], b: Sequence[str], codes: list[Opcode], context: int, lead: int = 0
) -> list[str]:
    """The hunks; ``a``/``b`` start at line ``lead`` of their files."""
    out: list[str] = []
    for group in _grouped(codes, context):
        first, last = group[0], group[-1]
        old_range = _format_range(lead + first[1], lead + last[2])
        new_range = _format_range(lead + first[3], lead + last[4])
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                _emit(out, " ", a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                _emit(out, "-", a[i1:i2])
            if tag in ("replace", "insert"):
                _emit(out, "+", b[j1:j2])
    return out


def diff_texts(
    old: str,
    new: str,
    path: str,
    *,
    context: int = 3,
    old_exists: bool = True,
    new_exists: bool = True,
    position_encoding: PositionEncoding = "utf-16",
) -> FileDiff:
    """Git-style unified diff of ``old`` → ``new`` plus counts and LSP edits.

    ``old_exists=False`` renders a file creation (``--- /dev/null``),
    ``new_exists=False`` a deletion; the missing side's text must be empty.
    """
    if context < 0:
        raise ValueError("context must be >= 0")
    if not old_exists and not new_exists:
        raise ValueError("at least one side must exist")
    if not old_exists and old:
        raise ValueError("old text given for a file that did not exist")
    if not new_exists and new:
        raise ValueError("new text given for a deleted file")
    if old == new and old_exists == new_exists:
        return FileDiff(path, "", 0, 0, [])

    lead, old_mid, new_mid, at_end = _around_the_change(old, new, context)
    a, b = split_lines(old_mid), split_lines(new_mid)
    codes = line_opcodes(a, b)
    additions = deletions = 0
    for tag, i1, i2, j1, j2 in codes:
        if tag != "equal":
            deletions += i2 - i1
            additions += j2 - j1

    path = visible(path)  # a control character in a name cannot forge a header line
    out = [f"diff --git a/{path} b/{path}\n"]
    if not old_exists:
        out.append(f"new file mode {_FILE_MODE}\n")
    elif not new_exists:
        out.append(f"deleted file mode {_FILE_MODE}\n")
    if additions or deletions:
        # git prints no ---/+++ pair for an empty created/deleted file.
        out.append("--- /dev/null\n" if not old_exists else f"--- a/{path}\n")
        out.append("+++ /dev/null\n" if not new_exists else f"+++ b/{path}\n")
        out.extend(_hunks(a, b, codes, context, lead))

    return FileDiff(
        path=path,
        unified="".join(out),
        additions=additions,
        deletions=deletions,
        edits=text_edits(old, a, b, codes, position_encoding, lead, at_end),
    )


def rename_diff(unified: str, src: str, dest: str) -> str:
    """git's rendering of a move: rename headers, then the content change if any."""
    header = f"diff --git a/{src} b/{dest}\n"
    if not unified:
        return f"{header}similarity index 100%\nrename from {src}\nrename to {dest}\n"
    body = unified.split("\n", 1)[1]
    files = f"--- a/{src}\n+++ b/{src}\n"
    if body.startswith(files):
        body = f"--- a/{src}\n+++ b/{dest}\n" + body[len(files) :]
    return f"{header}rename from {src}\nrename to {dest}\n{body}"


_AFFIX_BLOCK = 1 << 16


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix: slices compared in C, a block at a time."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit:
        stop = min(start + _AFFIX_BLOCK, limit)
        if a[start:stop] != b[start:stop]:
            lo, hi = start, stop  # the first difference is in [lo, hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        start = stop
    return limit


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    done = 0
    while done < limit:
        size = min(_AFFIX_BLOCK, limit - done)
        if a[len(a) - done - size : len(a) - done] != b[len(b) - done - size : len(b) - done]:
            lo, hi = done, done + size  # matched lo chars from the end; hi does not match
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
                    lo = mid
                else:
                    hi = mid
            return lo
        done += size
    return limit


def _around_the_change(old: str, new: str, context: int) -> tuple[int, str, str, bool]:
    """The lines that can differ, with ``context`` lines around them.

    Returns how many whole lines come before that region (the same in both texts), the
    region of each text, and whether it reaches the end of the file. The common prefix
    and suffix are found with C-speed slice comparisons and never split into lines, so
    an edit to one spot of a 100 000-line file diffs a handful of lines. Texts with a
    bare ``\r`` (LSP counts it as a line break) are diffed whole.
    """
    if has_lone_cr(old):
        return 0, old, new, True
    prefix = _common_prefix(old, new)
    start = old.rfind("\n", 0, prefix) + 1  # back to a line start (common to both)
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind("\n", 0, start - 1) + 1
    suffix = _common_suffix(old, new, min(len(old), len(new)) - start)
    end_old, end_new = len(old) - suffix, len(new) - suffix
    # The region must end at a line start in both texts: if it does not, move its end
    # past the next line break (inside the common suffix, so at the same place in both).
    at_line_start = (
        end_old > 0 and end_new > 0 and old[end_old - 1] == "\n" and new[end_new - 1] == "\n"
    )
    if suffix and not at_line_start:
        cut = old.find("\n", end_old)
        step = (len(old) if cut < 0 else cut + 1) - end_old
        end_old, end_new = end_old + step, end_new + step
    for _ in range(context):
        if end_old >= len(old):
            break
        nxt = old.find("\n", end_old)
        step = (len(old) if nxt < 0 else nxt + 1) - end_old
        end_old, end_new = end_old + step, end_new + step
    lead = old.count("\n", 0, start)
    return lead, old[start:end_old], new[start:end_new], end_old >= len(old)


# --------------------------------------------------------------------------
# trimDiff
# --------------------------------------------------------------------------

_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_LEADING_WS = re.compile(r"^\s*")


def _content_mask(lines: list[str]) -> list[bool]:
    """Which lines are hunk body lines.

    Counting hunk lengths lets a removed line such as "-- sql comment" (which
    renders as "--- ...") count as content; OpenCode's prefix check would
    mistake it for a header. Outside hunks the OpenCode rule applies.
    """
    mask = [False] * len(lines)
    old_left = new_left = 0
    for k, line in enumerate(lines):
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag == "\\":
                continue
            mask[k] = tag in ("+", "-", " ")
            if tag == "+":
                new_left -= 1
            elif tag == "-":
                old_left -= 1
            else:
                old_left -= 1
                new_left -= 1
            continue
        m = _HUNK_HEADER.match(line)
        if m:
            old_left = 1 if m.group(1) is None else int(m.group(1))
            new_left = 1 if m.group(2) is None else int(m.group(2))
            continue
        mask[k] = line[:1] in ("+", "-", " ") and not line.startswith(("---", "+++"))
    return mask


def trim_diff(unified: str) -> str:
    """OpenCode's trimDiff: drop the indentation common to all content lines."""
    lines = unified.split("\n")
    mask = _content_mask(lines)
    width: int | None = None
    for line, is_content in zip(lines, mask, strict=True):
        if not is_content:
            continue
        body = line[1:]
        if body.strip():
            lead = _LEADING_WS.match(body)
            w = lead.end() if lead else 0
            width = w if width is None else min(width, w)
    if not width:
        return unified
    return "\n".join(
        line[0] + line[1 + width :] if is_content else line
        for line, is_content in zip(lines, mask, strict=True)
    )
