"""A change whose file changed while a person reviewed it: moved onto the file's new text.

A review can stay open for minutes, and meanwhile the user (or a command, a ``git
checkout``) may change the file on disk.  Writing the text planned before the review
would silently undo those changes, and a hunk applied by its old line numbers would
land in the wrong place.  So, after the answer and before anything is written, each
file the set changes is read again: where it still holds what the change was made
from, nothing happens; where it changed, the agent's (accepted) change is replayed on
the new text line by line (``rebase``, as for unsaved buffers); where the two touch,
nothing is written and the model is told to read the file again.

Files whose change was made from an editor buffer with unsaved changes are the
editor's: the bridge rebases onto what the user typed since (``server.editor_writes``).
A buffer the user saved meanwhile is one of those no more: its file is checked as any
other (what it holds is what was saved).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools.changes.changeset import ChangeSet, FileChange
from tools.changes.rebase import rebase
from tools.errors import ToolError
from tools.fsio import TextFile, read_text
from tools.fsio.paths import relative


@dataclass
class Refreshed:
    changeset: ChangeSet
    notes: list[str] = field(default_factory=list)


def _current(path: Path, real: Path) -> TextFile | None:
    try:
        return read_text(path, real)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeError) as error:
        raise ToolError(f"Could not read {path} again before writing it: {error}") from error


def stale(rel: str, why: str) -> ToolError:
    return ToolError(
        f"{rel} changed while the user was reviewing your change ({why}), so nothing was "
        "written and the file keeps its new content. Read it again and make the change on "
        "what it holds now."
    )


def onto_current(
    changeset: ChangeSet,
    worktree: Path,
    real: Callable[[Path], Path],
    still_unsaved: frozenset[Path] | None = None,
) -> Refreshed:
    """The set moved onto what its files hold now; raises when one cannot be (blocking).

    ``still_unsaved``: the paths of ``changeset.unsaved`` whose buffer still has unsaved
    changes (None: all of them)."""
    unsaved = changeset.unsaved if still_unsaved is None else changeset.unsaved & still_unsaved
    changes: list[FileChange] = []
    moved: list[str] = []
    for change in changeset.changes:
        if change.path in unsaved:
            changes.append(change)
            continue
        rel = relative(change.path, worktree)
        now = _current(change.path, real(change.path))
        before = change.before
        if before is None:
            if now is not None:
                raise stale(rel, "the file now exists")
            changes.append(change)
            continue
        if now is not None and now.text == before.text:
            changes.append(change)
            continue
        if now is None:
            raise stale(rel, "the file was deleted")
        if change.after is None or change.move_to is not None:
            raise stale(rel, "it is deleted or moved whole, and its content is not the same")
        rebased = rebase(before.text, change.after.text, now.text)
        if rebased.text is None:
            raise stale(rel, "in the lines your change touches")
        after = dataclasses.replace(change.after, text=rebased.text)
        changes.append(dataclasses.replace(change, before=now, after=after))
        moved.append(rel)
    if not moved:
        if unsaved != changeset.unsaved:
            return Refreshed(ChangeSet(changes, unsaved))
        return Refreshed(changeset)
    note = (
        f"Note: {', '.join(moved)} changed while the user was reviewing your change; it was "
        "applied onto the new content, where the two do not touch, so line numbers may "
        "differ from what you read."
    )
    return Refreshed(ChangeSet(changes, unsaved), [note])
