"""Which lines two texts share: ``split_lines`` and difflib-style ``line_opcodes``.

The matching is patience-anchored rather than a whole-file ``difflib`` run, because
``SequenceMatcher`` on a large file with many scattered changes is far too slow
for an interactive edit loop (tens of seconds at 100k lines); anchoring on
unique lines keeps typical source files near-linear and only hands small,
anchor-free gaps to ``difflib``.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

__all__ = ["Opcode", "line_opcodes", "split_lines"]

Opcode = tuple[str, int, int, int, int]

# Anchor-free gaps up to this size go to difflib (quadratic-ish); larger ones
# are emitted as a single replace block: correct, merely not minimal. The
# per-diff budget caps the total so many mid-sized anchor-free gaps (e.g. files
# of highly repetitive lines) cannot add up to seconds.
_FALLBACK_MAX_SIDE = 2000
_FALLBACK_MAX_PRODUCT = 1_000_000
_FALLBACK_BUDGET = 4_000_000


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
