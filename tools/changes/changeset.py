"""A change set: every file operation one tool call makes, planned before anything is written.

A file tool plans (finds the text, builds the new content) and hands a ``ChangeSet``
to ``tools.changes.commit``, which asks, writes and reports.  The set lists its
changes in the order the tool made them; several may touch one file (apply_patch's
hunks compose), so ``originals`` and ``finals`` give each path's state before the
first change and after the last.
"""

from __future__ import annotations

from codecs import BOM_UTF8
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tools.changes.diff import FileDiff
from tools.fsio import TextFile

ChangeKind = Literal["add", "update", "delete", "move"]


@dataclass
class FileChange:
    """One operation on one file, with its text before and after.

    ``before`` is what the file holds as the agent saw it (an editor buffer with unsaved
    changes stands in for the disk); None: absent.  ``after`` is the new content in the
    file's form (encoding, BOM, mode); None: deleted.  A move takes ``path``'s text,
    changed to ``after``, to ``move_to``, which held ``replaced`` before.
    """

    path: Path
    before: TextFile | None
    after: TextFile | None
    kind: ChangeKind = "update"
    move_to: Path | None = None
    replaced: TextFile | None = None

    @property
    def target(self) -> Path:
        """Where the new content lands."""
        return self.move_to or self.path

    @property
    def encoded(self) -> bytes:
        assert self.after is not None, "a deletion has no content"
        return self.after.encode(self.after.text)

    def encoding_error(self) -> UnicodeEncodeError | None:
        """The error encoding the new text would raise, if any (checked before asking)."""
        if self.after is None or self.after.text.isascii():
            return None  # every encoding toolhost writes (UTF-8/16/32, latin-1) takes ASCII
        try:
            self.after.encode(self.after.text)
        except UnicodeEncodeError as error:
            return error
        return None

    @property
    def mode(self) -> int | None:
        return self.after.mode if self.after is not None else None


def new_text(path: Path, before: TextFile | None, text: str, *, bom: bool = False) -> FileChange:
    """A file's whole new text (edit, write, multiedit): in the old file's form, else UTF-8
    (with a UTF-8 BOM when ``bom``: the content of a new file started with one)."""
    if before is None:
        return FileChange(path, None, TextFile(text, bom=BOM_UTF8 if bom else b""), kind="add")
    return FileChange(path, before, TextFile(text, before.encoding, before.bom, before.mode))


@dataclass
class Described:
    """One change with what ``commit.describe`` made of it: the ask and the metadata show it."""

    change: FileChange
    diff: FileDiff
    unified: str  # the diff text, with rename headers for a move
    document_changes: list[dict[str, Any]]


@dataclass
class ChangeSet:
    changes: list[FileChange]
    # Paths whose ``before`` is an editor buffer's unsaved text, not the disk's.
    unsaved: frozenset[Path] = frozenset()

    def originals(self) -> dict[Path, TextFile | None]:
        """What each touched path holds before the set (None: absent)."""
        found: dict[Path, TextFile | None] = {}
        for change in self.changes:
            found.setdefault(change.path, change.before)
            if change.move_to is not None:
                found.setdefault(change.move_to, change.replaced)
        return found

    def finals(self) -> dict[Path, TextFile | None]:
        """What each touched path holds after the set (None: absent), in first-touch order."""
        found = dict.fromkeys(self.originals())
        for change in self.changes:
            if change.move_to is not None and change.move_to != change.path:
                found[change.move_to] = change.after
                found[change.path] = None
            else:
                found[change.path] = change.after
        return found

    def kept(self) -> list[Path]:
        """The files that hold new content afterwards, in change order (for diagnostics)."""
        finals = self.finals()
        return list(dict.fromkeys(c.target for c in self.changes if finals.get(c.target)))


@dataclass
class PreparedChange:
    """One file's final content as the editor bridge lands it."""

    change: FileChange  # before: the text the change was made from; after: what lands
    diff: FileDiff
    # Set by the editor bridge when the file on disk is not exactly the change (the
    # editor saved something else, e.g. a format-on-save): said to the model.
    note: str = ""
    via_editor: bool = False  # set by the bridge when the editor's buffer took the change
    # False: the buffer keeps unsaved changes of the user's, so the editor must not save
    # it (the disk gets the agent's change on its own, or stays as it is).
    save: bool = True
    # True: the person chose to save the buffer with their unsaved changes (the change was
    # made from it, not from the disk): only the buffer as it stands may reach the disk.
    with_unsaved: bool = False
    edit: dict[str, Any] = field(default_factory=dict)  # the LSP WorkspaceEdit for this file
