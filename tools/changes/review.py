"""A person's review of a change set: the hunks they see, and the set their answer leaves.

``plan`` cuts every change into the hunks of its diff (``metadata.hunks`` of the edit
ask) and, for files whose editor buffer has unsaved changes, says whether the
agent's change overlaps the user's unsaved lines.  ``narrow`` takes the reply
(``hunks``, ``files``, ``edited``: docs/protocol.md) and returns the change set that
holds only what the person accepted, with the words that tell the model exactly
what was applied and what was not.

A change is applied whole, in part (some of its hunks) or not at all.  Added,
deleted and moved files, and files the set changes more than once (apply_patch
hunks that compose), are taken whole or not at all: a part of them would not be
the change any hunk showed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.changes.changeset import ChangeSet, Described, FileChange
from tools.changes.diff import diff_texts
from tools.changes.hunks import Hunk, apply_hunks, parse_hunks
from tools.changes.line_match import split_lines
from tools.changes.rebase import Rebased, rebase
from tools.errors import PermissionRejectedError
from tools.fsio import read_text
from tools.fsio.paths import relative
from tools.permission.asks import PermissionReply

CONTEXT_LINES = 3
MAX_SHOWN_LINES = 40


@dataclass
class Plan:
    """What the ask shows: each change's file and hunks, and unsaved buffers' overlaps."""

    files: list[str]  # per change: its relative path (the target of a move)
    hunks: list[list[Hunk]]  # per change
    whole_only: list[bool]  # per change: taken whole or not at all
    unsaved: dict[Path, Rebased] = field(default_factory=dict)

    @property
    def overlapping(self) -> list[Path]:
        return [path for path, rebased in self.unsaved.items() if rebased.text is None]

    def metadata(self, worktree: Path) -> dict[str, Any]:
        data: dict[str, Any] = {"hunks": [h.to_wire() for hs in self.hunks for h in hs]}
        if self.unsaved:
            data["unsaved"] = [
                {
                    "file": relative(path, worktree),
                    "overlaps": rebased.text is None,
                    "lines": [list(r) for r in rebased.overlaps],
                }
                for path, rebased in self.unsaved.items()
            ]
        return data


def plan(changeset: ChangeSet, described: list[Described], worktree: Path) -> Plan:
    """Blocking (reads the disk's text of unsaved buffers): run in a worker thread."""
    counts: dict[Path, int] = {}
    for change in changeset.changes:
        for path in {change.path, change.target}:
            counts[path] = counts.get(path, 0) + 1
    files: list[str] = []
    hunks: list[list[Hunk]] = []
    whole: list[bool] = []
    taken: dict[str, int] = {}  # hunks numbered per file across changes, so ids stay unique
    for item in described:
        change = item.change
        rel = relative(change.target, worktree)
        found = parse_hunks(rel, item.diff.unified)
        first = taken.get(rel, 0)
        if first:
            found = [_renumber(h, first + i + 1) for i, h in enumerate(found)]
        taken[rel] = first + len(found)
        files.append(rel)
        hunks.append(found)
        composed = counts[change.path] > 1 or counts[change.target] > 1
        whole.append(change.kind != "update" or change.move_to is not None or composed)
    return Plan(files, hunks, whole, rebase_unsaved(changeset))


def _renumber(hunk: Hunk, number: int) -> Hunk:
    return dataclasses.replace(hunk, id=f"{hunk.file}#{number}")


def _disk_text(path: Path) -> str | None:
    try:
        return read_text(path).text
    except (OSError, UnicodeError):
        return None


def rebase_unsaved(changeset: ChangeSet) -> dict[Path, Rebased]:
    """For the files with unsaved buffers: the agent's change moved onto the disk's text."""
    finals, originals = changeset.finals(), changeset.originals()
    found: dict[Path, Rebased] = {}
    for path in changeset.unsaved:
        before, after = originals.get(path), finals.get(path)
        disk = _disk_text(path) if before is not None and after is not None else None
        if before is not None and after is not None and disk is not None:
            found[path] = rebase(before.text, after.text, disk)
    return found


# --- narrowing --------------------------------------------------------------------------------


@dataclass
class Narrowed:
    changeset: ChangeSet
    narrowed: bool = False  # the person left out some of the change
    applied: list[Hunk] = field(default_factory=list)
    rejected: list[Hunk] = field(default_factory=list)
    applied_files: list[str] = field(default_factory=list)  # changed in part or whole
    rejected_files: list[str] = field(default_factory=list)  # left as they were
    # per rejected hunk: the change's path and the 0-based line where it sits now
    rejected_at: dict[str, tuple[Path, int]] = field(default_factory=dict)
    edited: dict[str, str] = field(default_factory=dict)  # rel -> diff proposed -> edited
    notes: list[str] = field(default_factory=list)


def narrow(
    changeset: ChangeSet, review: Plan, reply: PermissionReply | None, worktree: Path
) -> Narrowed:
    """The set as the person's reply leaves it; raises a rejection when nothing is left."""
    if reply is None or (not reply.narrowed and not reply.edited):
        return Narrowed(changeset)
    files = set(reply.files or ())
    hunk_ids = set(reply.hunks or ())
    edited = reply.edited or {}
    known = {h.id for hs in review.hunks for h in hs}
    result = Narrowed(changeset, narrowed=reply.narrowed)
    unknown = sorted((hunk_ids - known) | (files - set(review.files)))
    if unknown:
        result.notes.append(f"(The review named {', '.join(unknown)}, which this change has not.)")
    kept: list[FileChange] = []
    for index, change in enumerate(changeset.changes):
        rel, hunks = review.files[index], review.hunks[index]
        source = relative(change.path, worktree)
        whole = not reply.narrowed or rel in files or source in files
        chosen = [h for h in hunks if h.id in hunk_ids]
        if rel in edited and change.after is not None:
            proposed = change.after.text
            change = dataclasses.replace(
                change, after=dataclasses.replace(change.after, text=edited[rel])
            )
            diff = diff_texts(proposed, edited[rel], rel).unified
            if diff:
                result.edited[rel] = diff
            kept.append(change)
            result.applied.extend(hunks)
            result.applied_files.append(rel)
            continue
        if whole or (hunks and len(chosen) == len(hunks)):
            kept.append(change)
            result.applied.extend(hunks)
            result.applied_files.append(rel)
            continue
        if not chosen or review.whole_only[index]:
            if chosen:
                result.notes.append(
                    f"{rel} was not changed: {_why_whole(change)}, it is applied whole or "
                    "not at all, and only some of its hunks were accepted."
                )
            result.rejected.extend(hunks)
            result.rejected_files.append(rel)
            for hunk in hunks:
                result.rejected_at[hunk.id] = (change.path, hunk.old_start)
            continue
        assert change.before is not None and change.after is not None
        text = apply_hunks(change.before.text, chosen)
        kept.append(dataclasses.replace(change, after=dataclasses.replace(change.after, text=text)))
        result.applied.extend(chosen)
        result.applied_files.append(rel)
        shift = 0
        for hunk in hunks:
            if hunk in chosen:
                shift += len(hunk.new) - len(hunk.old)
            else:
                result.rejected.append(hunk)
                result.rejected_at[hunk.id] = (change.path, hunk.old_start + shift)
    if not kept:
        raise PermissionRejectedError(
            "The user reviewed this change and accepted none of it, so nothing was written."
            + (f" The user's message: {reply.message}" if reply.message else ""),
            metadata={"feedback": reply.message} if reply.message else None,
        )
    result.changeset = ChangeSet(kept, changeset.unsaved)
    # Naming every hunk (or file) is accepting all of it: the model is told "part" only
    # when something was left out.
    result.narrowed = bool(result.rejected or result.rejected_files)
    return result


def _why_whole(change: FileChange) -> str:
    if change.kind == "add":
        return "it is a new file"
    if change.kind == "delete":
        return "it is a deletion"
    if change.move_to is not None:
        return "it is moved"
    return "the change edits it more than once"


# --- what the model is told -----------------------------------------------------------------


def report(result: Narrowed, current_text: dict[Path, str]) -> list[str]:
    """Notes for the tool's output: what was applied, what not (with the text around it),
    and how the person changed the proposal."""
    notes = list(result.notes)
    if result.narrowed:
        applied = ", ".join(f"{h.id} ({h.header})" for h in result.applied) or "no hunk"
        lines = [
            "The user reviewed this change and applied only part of it.",
            f"Applied: {applied}.",
        ]
        if result.applied_files:
            lines.append(f"Files changed: {', '.join(result.applied_files)}.")
        if result.rejected_files:
            lines.append(f"Files left as they were: {', '.join(result.rejected_files)}.")
        for hunk in result.rejected:
            lines.append(f"Not applied: {hunk.id} ({hunk.header}).")
            where = result.rejected_at.get(hunk.id)
            if where is not None and where[0] in current_text:
                lines.append(_around(current_text[where[0]], where[1], len(hunk.old)))
        lines.append("Do not make the rejected changes again unless the user asks for them.")
        notes.append("\n".join(lines))
    for rel, diff in result.edited.items():
        notes.append(
            f"The user edited your proposed change to {rel} before accepting it; the file holds "
            f"the user's version. What the user changed in your proposal:\n{diff.rstrip()}"
        )
    return notes


def _around(text: str, start: int, count: int) -> str:
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    if not lines:
        return "The file is now empty."
    first = max(0, min(start, len(lines) - 1) - CONTEXT_LINES)
    last = min(len(lines), start + max(count, 1) + CONTEXT_LINES, first + MAX_SHOWN_LINES)
    numbered = "\n".join(f"{n + 1}: {lines[n]}" for n in range(first, last))
    return (
        f"There the file now reads (lines {first + 1}-{last}):\n<content>\n{numbered}\n</content>"
    )
