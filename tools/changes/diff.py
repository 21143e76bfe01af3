"""Line diffs for file-changing tools: unified text, counts and LSP edits.

Everything here is pure and LSP-library free: protocol shapes are plain dicts
so the tool layer stays importable without pygls/lsprotocol.

The diff is patience-anchored rather than a whole-file ``difflib`` run, because
``SequenceMatcher`` on a large file with many scattered changes is far too slow
for an interactive edit loop (tens of seconds at 100k lines); anchoring on
unique lines keeps typical source files near-linear and only hands small,
anchor-free gaps to ``difflib``.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise
from typing import Any, Literal

__all__ = [
    "FileDiff",
    "PositionEncoding",
    "apply_text_edits",
    "create_file_edit",
    "delete_file_edit",
    "diff_texts",
    "line_opcodes",
    "split_lines",
    "trim_diff",
    "workspace_edit",
]

Opcode = tuple[str, int, int, int, int]
PositionEncoding = Literal["utf-16", "utf-8", "utf-32"]

# Anchor-free gaps up to this size go to difflib (quadratic-ish); larger ones
# are emitted as a single replace block: correct, merely not minimal. The
# per-diff budget caps the total so many mid-sized anchor-free gaps (e.g. files
# of highly repetitive lines) cannot add up to seconds.
_FALLBACK_MAX_SIDE = 2000
_FALLBACK_MAX_PRODUCT = 1_000_000
_FALLBACK_BUDGET = 4_000_000

_NO_EOL = "\\ No newline at end of file\n"
_FILE_MODE = "100644"
# LSP treats \r\n, \r and \n as line terminators; "\n"-split lines only agree
# with that when no bare \r is present.
_LONE_CR = re.compile(r"\r(?!\n)")
_LSP_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class FileDiff:
    path: str  # worktree-relative, forward slashes
    unified: str  # git-style unified diff text ("" when no change)
    additions: int
    deletions: int
    edits: list[dict[str, Any]]  # LSP TextEdits against the OLD text


# --------------------------------------------------------------------------
# Line diff
# --------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only, keeping terminators; the last line may lack one.

    Keeping terminators makes "x" and "x\\n" different lines, which is what
    lets the diff express a change of the final newline like git does.
    """
    if not text:
        return []
    parts = text.split("\n")
    last = parts.pop()
    lines = [p + "\n" for p in parts]
    if last:
        lines.append(last)
    return lines


def line_opcodes(old_lines: Sequence[str], new_lines: Sequence[str]) -> list[Opcode]:
    """difflib-style opcodes ``(tag, i1, i2, j1, j2)`` with equal runs coalesced."""
    blocks = _matching_blocks(old_lines, new_lines)
    codes: list[Opcode] = []
    i = j = 0
    for bi, bj, size in blocks:
        if gap := _gap(i, bi, j, bj):
            codes.append(gap)
        codes.append(("equal", bi, bi + size, bj, bj + size))
        i, j = bi + size, bj + size
    if gap := _gap(i, len(old_lines), j, len(new_lines)):
        codes.append(gap)
    return codes


def _gap(i1: int, i2: int, j1: int, j2: int) -> Opcode | None:
    """The opcode for the unmatched lines ``old[i1:i2]`` / ``new[j1:j2]``, if any."""
    if i1 < i2 and j1 < j2:
        return ("replace", i1, i2, j1, j2)
    if i1 < i2:
        return ("delete", i1, i2, j1, j1)
    if j1 < j2:
        return ("insert", i1, i1, j1, j2)
    return None


def _matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    """Monotone, non-adjacent matching blocks ``(i, j, size)`` sorted by i."""
    found: list[tuple[int, int, int]] = []
    # Explicit stack: gap nesting can get deep on adversarial input.
    stack = [(0, len(a), 0, len(b))]
    budget = _FALLBACK_BUDGET
    while stack:
        alo, ahi, blo, bhi = stack.pop()

        start_a, start_b = alo, blo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        if alo > start_a:
            found.append((start_a, start_b, alo - start_a))
        end_a = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        if ahi < end_a:
            found.append((ahi, bhi, end_a - ahi))
        if alo == ahi or blo == bhi:
            continue

        asub, bsub = a[alo:ahi], b[blo:bhi]
        na, nb = ahi - alo, bhi - blo
        # Most gaps are a line or two of genuine change; skip the anchor work.
        if na + nb <= 16 and set(asub).isdisjoint(bsub):
            continue
        anchors = _unique_anchors(asub, bsub)
        if anchors:
            _push_anchored(anchors, alo, ahi, blo, bhi, found, stack)
            continue

        cost = na * nb
        if (
            na > _FALLBACK_MAX_SIDE
            or nb > _FALLBACK_MAX_SIDE
            or cost > _FALLBACK_MAX_PRODUCT
            or cost > budget
        ):
            continue  # one replace block
        if na + nb > 16 and set(asub).isdisjoint(bsub):
            continue
        budget -= cost
        matcher = difflib.SequenceMatcher(None, asub, bsub, autojunk=False)
        found.extend((alo + i, blo + j, k) for i, j, k in matcher.get_matching_blocks() if k)

    found.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, k in found:
        if merged:
            pi, pj, pk = merged[-1]
            if pi + pk == i and pj + pk == j:
                merged[-1] = (pi, pj, pk + k)
                continue
        merged.append((i, j, k))
    return merged


def _unique_anchors(asub: Sequence[str], bsub: Sequence[str]) -> list[tuple[int, int]]:
    """(i, j) pairs, relative to the slices, of lines occurring once on each side,
    reduced to their longest run increasing in both i and j."""
    ca = Counter(asub)
    cb = Counter(bsub)
    pos_b = dict(zip(bsub, range(len(bsub)), strict=True))  # last index == only index
    in_b = cb.get  # Counter.__missing__ is Python-level; .get stays in C
    pairs = [(i, pos_b[line]) for i, line in enumerate(asub) if ca[line] == 1 and in_b(line) == 1]
    if not pairs:
        return pairs
    js = [j for _, j in pairs]
    if all(x < y for x, y in pairwise(js)):
        return pairs  # common case: nothing moved, the LIS is everything
    return [pairs[k] for k in _longest_increasing(js)]


def _longest_increasing(seq: list[int]) -> list[int]:
    """Indices of a longest strictly increasing subsequence (patience sort)."""
    tails: list[int] = []
    tail_idx: list[int] = []
    prev = [-1] * len(seq)
    for k, v in enumerate(seq):
        pos = bisect_left(tails, v)
        if pos:
            prev[k] = tail_idx[pos - 1]
        if pos == len(tails):
            tails.append(v)
            tail_idx.append(k)
        else:
            tails[pos] = v
            tail_idx[pos] = k
    out: list[int] = []
    k = tail_idx[-1]
    while k >= 0:
        out.append(k)
        k = prev[k]
    out.reverse()
    return out


def _push_anchored(
    anchors: list[tuple[int, int]],
    alo: int,
    ahi: int,
    blo: int,
    bhi: int,
    found: list[tuple[int, int, int]],
    stack: list[tuple[int, int, int, int]],
) -> None:
    pi, pj = alo, blo  # end of the previous anchor run (absolute)
    run_i = run_j = -1
    run_len = 0
    for ri, rj in anchors:
        i, j = ri + alo, rj + blo
        if i == pi and j == pj and run_len:
            run_len += 1  # contiguous with the current run: no gap
        else:
            if run_len:
                found.append((run_i, run_j, run_len))
            if i > pi or j > pj:
                stack.append((pi, i, pj, j))
            run_i, run_j, run_len = i, j, 1
        pi, pj = i + 1, j + 1
    found.append((run_i, run_j, run_len))
    if pi < ahi or pj < bhi:
        stack.append((pi, ahi, pj, bhi))


# --------------------------------------------------------------------------
# Unified text
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# LSP positions
# --------------------------------------------------------------------------


def position_units(s: str, encoding: PositionEncoding) -> int:
    """How many position units (the negotiated LSP encoding) ``s`` spans."""
    if encoding == "utf-32" or s.isascii():
        return len(s)
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s.encode("utf-8"))


def _lsp_line_starts(text: str) -> list[int]:
    """Offsets where LSP lines begin (\\r\\n, \\r and \\n all terminate a line)."""
    if "\r" not in text:
        starts = [0]
        starts.extend(accumulate(len(p) + 1 for p in text.split("\n")[:-1]))
        return starts
    starts = [0]
    starts.extend(m.end() for m in _LSP_EOL.finditer(text))
    return starts


def _position(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def _range(start: dict[str, int], end: dict[str, int]) -> dict[str, Any]:
    return {"start": start, "end": end}


def _text_edits(
    old: str,
    old_lines: Sequence[str],
    new_lines: Sequence[str],
    codes: list[Opcode],
    encoding: PositionEncoding,
    lead: int = 0,
    at_end: bool = True,
) -> list[dict[str, Any]]:
    """LSP edits; ``old_lines`` are lines ``lead``.. of ``old`` (its end when ``at_end``)."""
    n = len(old_lines)
    partial_last = at_end and bool(old_lines) and not old_lines[-1].endswith("\n")
    lone_cr = "\r" in old and _LONE_CR.search(old) is not None  # then lead == 0

    if lone_cr:
        # Rare (classic-Mac line endings): map "\n"-line offsets through the
        # LSP line table so the client's notion of lines is honoured.
        line_offsets = [0, *accumulate(len(line) for line in old_lines)]
        starts = _lsp_line_starts(old)

        def pos(i: int) -> dict[str, int]:
            offset = line_offsets[i]
            ln = bisect_right(starts, offset) - 1
            return _position(ln, position_units(old[starts[ln] : offset], encoding))

    else:
        last = lead + n - 1
        eof = _position(last, position_units(old_lines[-1], encoding)) if partial_last else None

        def pos(i: int) -> dict[str, int]:
            if eof is not None and i == n:
                return eof
            return _position(lead + i, 0)

    edits: list[dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            continue
        edits.append({"range": _range(pos(i1), pos(i2)), "newText": "".join(new_lines[j1:j2])})
    return edits


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
    starts = _lsp_line_starts(text)
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


# --------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------


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
        edits=_text_edits(old, a, b, codes, position_encoding, lead, at_end),
    )


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
    if "\r" in old and _LONE_CR.search(old) is not None:
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


def workspace_edit(
    uri: str, edits: list[dict[str, Any]], version: int | None = None
) -> dict[str, Any]:
    return {"documentChanges": [{"textDocument": {"uri": uri, "version": version}, "edits": edits}]}


def create_file_edit(uri: str, text: str) -> dict[str, Any]:
    # ignoreIfExists keeps a racing creation from failing the whole edit;
    # the caller is expected to use a plain text edit for existing files.
    insert = {"range": _range(_position(0, 0), _position(0, 0)), "newText": text}
    return {
        "documentChanges": [
            {
                "kind": "create",
                "uri": uri,
                "options": {"overwrite": False, "ignoreIfExists": True},
            },
            {"textDocument": {"uri": uri, "version": None}, "edits": [insert]},
        ]
    }


def delete_file_edit(uri: str) -> dict[str, Any]:
    return {"documentChanges": [{"kind": "delete", "uri": uri}]}


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
