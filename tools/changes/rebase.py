"""The agent's change to an unsaved buffer, moved onto the file's text on disk.

A buffer with unsaved changes is the user's work in progress: the agent edits what
the user sees (the buffer), but the disk must get only the agent's change.  So the
agent's hunks (buffer -> proposed) are replayed on the disk's text, line by line,
where the buffer and the disk agree.  Where an agent hunk touches or borders lines
the user changed and has not saved, there is no honest way to split the two: that
is an overlap, and the person decides (see ``tools.changes.commit``).

Our own patience-anchored differ (``line_match.line_opcodes``) does the diffing, so the
regions are the ones the review shows; a general three-way merge library (such as
``merge3``, built on difflib's SequenceMatcher) is slower on big files and would not
tell us the overlapping lines for the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.changes.line_match import line_opcodes, split_lines


@dataclass(frozen=True)
class Rebased:
    text: str | None  # the disk's text with the agent's change; None when they overlap
    overlaps: tuple[tuple[int, int], ...] = ()  # 1-based buffer line ranges (first, last)


def _changed(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in line_opcodes(old, new) if tag != "equal"]


def rebase(buffer: str, proposed: str, disk: str) -> Rebased:
    """``disk`` with the change ``buffer`` -> ``proposed`` replayed on it."""
    base, ours, theirs = split_lines(buffer), split_lines(proposed), split_lines(disk)
    agent = _changed(base, ours)
    user = _changed(base, theirs)  # what saving would undo: the user's unsaved edits
    overlaps = [
        (a1, a2)
        for a1, a2, _, _ in agent
        # Touching counts (as in git): lines next to the user's edit are not "theirs" alone.
        if any(a1 <= u2 and u1 <= a2 for u1, u2, _, _ in user)
    ]
    if overlaps:
        return Rebased(None, tuple((a1 + 1, max(a1 + 1, a2)) for a1, a2 in overlaps))
    out: list[str] = []
    disk_at = 0  # the next disk line to copy
    for a1, a2, j1, j2 in agent:  # in buffer order
        # The disk up to where the agent's hunk starts, mapped through the user's edits.
        out.extend(theirs[disk_at : _to_disk(a1, user)])
        out.extend(ours[j1:j2])
        disk_at = _to_disk(a2, user)
    out.extend(theirs[disk_at:])
    return Rebased("".join(out))


def _to_disk(index: int, user: list[tuple[int, int, int, int]]) -> int:
    """The disk line that buffer line ``index`` (outside every user edit) corresponds to."""
    shift = 0
    for u1, u2, j1, j2 in user:
        if u2 <= index:
            shift += (j2 - j1) - (u2 - u1)
    return index + shift
