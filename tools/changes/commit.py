"""The change pipeline: from a planned change set to files changed, all or nothing.

``edit``, ``write``, ``multiedit`` and ``apply_patch`` plan a ``ChangeSet`` under
``locked`` and hand it to ``commit``, which runs the steps every change shares:

1. **describe**: each change's diff, its LSP ``WorkspaceEdit`` and its file entry;
2. **ask**: one ``edit`` ask for the whole set, with every file's diff and hunks, and
   for buffers with unsaved changes whether the agent's change overlaps the user's
   unsaved lines (``review.plan``); a rule that allows it skips the person, unless
   such an overlap needs their choice;
3. **narrow**: the person's answer (some files, some hunks, their own edit of the
   proposal: ``review.narrow``) becomes the set; everything after works from it;
4. **baseline**: the editor's diagnostics of the files the set keeps;
5. **write**: files the editor holds go through the editor (its undo, its buffer),
   the others through one disk ``Transaction``; if any step fails, the editor's
   buffers and the disk are put back and the model is told what holds now.  A buffer
   with the user's unsaved changes gets the change but is never saved: the disk gets
   the agent's change replayed on the disk's own text (``rebase``), or, where the two
   overlap, what the person chose (editor only, or save their changes too);
6. **stamp**: the written files count as read (the model saw their new text);
7. **report**: the diagnostics the change introduced, what the review applied and
   what not, and the metadata (``diff``, ``filediff``, ``files``, ``edit``,
   ``diagnostics``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.changes import diagnostics, failures, fresh, review
from tools.changes.changeset import ChangeSet, Described, FileChange, PreparedChange, new_text
from tools.changes.diff import FileDiff, diff_texts, rename_diff, trim_diff
from tools.changes.load import single_file
from tools.changes.rebase import Rebased
from tools.changes.transaction import Transaction, TransactionFailed
from tools.changes.workspace_edit import create_file_edit, delete_file_edit, workspace_edit
from tools.editor import EditorRefusal
from tools.errors import ToolError
from tools.fsio import TextFile
from tools.fsio.paths import relative
from tools.permission import protected
from tools.permission.asks import AlwaysOption, PermissionReply

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.fsio import TextFile

log = logging.getLogger("toolhost.tools.changes")

# Above this much text a diff takes milliseconds: worth a worker thread, so a big
# write does not hold up every other request (and cancellation) on the event loop.
THREAD_DIFF_CHARS = 256 * 1024


@contextlib.asynccontextmanager
async def locked(ctx: ToolContext, paths: Iterable[Path]) -> AsyncIterator[None]:
    """Hold the locks of ``paths`` (plan and commit inside).

    Taken in one order for every caller, so two changes over the same files cannot
    deadlock; paths that are one file (a symlink and its target) share one lock.
    """
    by_file = {os.path.realpath(path): path for path in paths}
    async with contextlib.AsyncExitStack() as stack:
        for real in sorted(by_file):
            await stack.enter_async_context(ctx.host.sessions.file_lock(by_file[real]))
        yield


# --- 1. describe ----------------------------------------------------------------------------


def describe(change: FileChange, worktree: Path) -> Described:
    rel = relative(change.path, worktree)
    old = change.before.text if change.before else ""
    new = change.after.text if change.after else ""
    uri = change.path.as_uri()
    if change.after is None:
        diff = diff_texts(old, "", rel, new_exists=False)
        return Described(change, diff, diff.unified, delete_file_edit(uri)["documentChanges"])
    if change.before is None:
        diff = diff_texts("", new, rel, old_exists=False)
        return Described(change, diff, diff.unified, create_file_edit(uri, new)["documentChanges"])
    if change.move_to is None:
        diff = diff_texts(old, new, rel)
        return Described(change, diff, diff.unified, _text_edit(uri, diff))
    dest = relative(change.move_to, worktree)
    diff = dataclasses.replace(diff_texts(old, new, rel), path=dest)
    rename: dict[str, Any] = {"kind": "rename", "oldUri": uri, "newUri": change.move_to.as_uri()}
    if change.replaced is not None:
        rename["options"] = {"overwrite": True}
    edits = _text_edit(change.move_to.as_uri(), diff)
    return Described(change, diff, rename_diff(diff.unified, rel, dest), [rename, *edits])


def _text_edit(uri: str, diff: FileDiff) -> list[dict[str, Any]]:
    return workspace_edit(uri, diff.edits)["documentChanges"] if diff.edits else []


def _file_entry(described: Described, worktree: Path) -> dict[str, Any]:
    """The file's line in ``metadata.files``."""
    change = described.change
    item: dict[str, Any] = {
        "filePath": str(change.path),
        "relativePath": relative(change.target, worktree),
        "type": change.kind,
        "patch": described.unified,
        "additions": described.diff.additions,
        "deletions": described.diff.deletions,
    }
    if change.move_to is not None:
        item["movePath"] = str(change.move_to)
    return item


async def _describe_all(ctx: ToolContext, changeset: ChangeSet) -> list[Described]:
    def work() -> list[Described]:
        return [describe(change, ctx.worktree) for change in changeset.changes]

    size = sum(
        len(c.after.text if c.after else "") + len(c.before.text if c.before else "")
        for c in changeset.changes
    )
    return await ctx.run_blocking(work) if size > THREAD_DIFF_CHARS else work()


# --- 2. ask -----------------------------------------------------------------------------------


def ask_patterns(changeset: ChangeSet, worktree: Path) -> list[str]:
    """What the ask names: every path, move destinations too (otherwise a rule that allows
    editing only some paths could be bypassed by moving an allowed file elsewhere)."""
    paths = [c.path for c in changeset.changes] + [
        c.move_to for c in changeset.changes if c.move_to is not None
    ]
    return list(dict.fromkeys(relative(p, worktree) for p in paths))


def always_options(patterns: list[str]) -> list[AlwaysOption]:
    """What an "always" for these paths may cover, narrowest first (the default)."""
    if len(patterns) == 1:
        options = [AlwaysOption("file", (patterns[0],), f"this file ({patterns[0]})")]
    else:
        shown = ", ".join(patterns[:3]) + (", …" if len(patterns) > 3 else "")
        options = [AlwaysOption("file", tuple(patterns), f"these files ({shown})")]
    folders = {p.rsplit("/", 1)[0] if "/" in p else "" for p in patterns}
    if len(folders) == 1 and (folder := folders.pop()):
        label = f"files in {folder}/ (and its subfolders)"
        options.append(AlwaysOption("folder", (f"{folder}/*",), label))
    suffixes = {Path(p).suffix for p in patterns}
    if len(suffixes) == 1 and (suffix := suffixes.pop()):
        label = f"files matching *{suffix} (in any folder)"
        options.append(AlwaysOption("extension", (f"*{suffix}",), label))
    options.append(AlwaysOption("all", ("*",), "every file in the project"))
    return options


async def _ask(
    ctx: ToolContext,
    changeset: ChangeSet,
    described: list[Described],
    title: str,
    ask_metadata: dict[str, Any],
    plan: review.Plan,
) -> PermissionReply | None:
    patterns = ask_patterns(changeset, ctx.worktree)
    overlapping = [relative(p, ctx.worktree) for p in plan.overlapping]
    if overlapping:
        title += f" (overlaps your unsaved changes in {', '.join(overlapping)})"
    # A config, tool or hook file (tools.permission.protected): asked every time, never "always".
    targets = [c.path for c in changeset.changes] + [
        c.move_to for c in changeset.changes if c.move_to
    ]
    guarded = protected.protected_changes(targets, ctx.host)
    extra: dict[str, Any] = {}
    if guarded:
        extra["protected"] = [
            {"relativePath": relative(path, ctx.worktree), "reason": why}
            for path, why in guarded.items()
        ]
        title = f"{title}. {protected.ALTERS}"
    return await ctx.ask(
        "edit",
        patterns,
        [] if guarded else list(always_options(patterns)[0].patterns),
        {
            "diff": "\n".join(trim_diff(d.unified) for d in described if d.unified),
            # The exact change, so a client can preview the proposed text, not rebuild it.
            "edit": {"documentChanges": [dc for d in described for dc in d.document_changes]},
            "files": [_file_entry(d, ctx.worktree) for d in described],
            **plan.metadata(ctx.worktree),
            **ask_metadata,
            **extra,
        },
        title=title,
        # Whose unsaved text goes to disk is the person's choice, even where rules allow.
        force=bool(overlapping or guarded),
        always_options=[] if guarded else always_options(patterns),
    )


# --- 3. and 6. diagnostics --------------------------------------------------------------------


class DiagnosticsWatch:
    """A baseline of the editor's diagnostics before a change, and the errors it added.

    The changed files are waited for (bounded); other files are read as they are
    then, since nothing tells when a language server is done re-checking them.
    A baseline the editor could not give means no report: without it every old
    error would look new.
    """

    def __init__(self, ctx: ToolContext, paths: list[Path], others: list[Path]) -> None:
        self.editor = ctx.editor
        self.paths = list(dict.fromkeys(paths))
        self.others = [p for p in dict.fromkeys(others) if p not in self.paths]
        self.before: dict[Path, list[dict[str, Any]]] | None = None

    async def baseline(self) -> None:
        if self.paths:
            self.before = await self.editor.diagnostics(self.paths + self.others, 0)

    async def introduced(self) -> dict[Path, list[dict[str, Any]]]:
        if self.before is None:
            return {}
        after = await self.editor.diagnostics(self.paths, None)
        if after is None:
            return {}
        if self.others:
            after = {**(await self.editor.diagnostics(self.others, 0) or {}), **after}
        # In the order asked for; a file without a baseline cannot say what is new.
        ordered = {p: after[p] for p in [*self.paths, *self.others] if p in after}
        return diagnostics.introduced_by_file(self.before, ordered)


# --- 4. write ---------------------------------------------------------------------------------


def disk_transaction(
    changeset: ChangeSet,
    skip: frozenset[Path],
    check: Any,
    disk: dict[Path, TextFile | None] | None = None,
    real: Any = None,
    first: Callable[[], None] | None = None,
) -> Transaction:
    """Write every changed file but ``skip``, then delete (so a crash part way loses no
    content).  The committed transaction is returned so that it can still be undone.

    ``disk``: what files with unsaved buffers get on disk instead of their final text
    (the agent's change on the disk's text; None: the disk stays as it is).
    ``real``: where each path was checked to be (``ctx.real``), which is what is touched.
    ``first``: run once the writes are queued, before the transaction begins.
    """
    transaction = Transaction(check, real)
    originals, finals = changeset.originals(), changeset.finals()
    disk = disk or {}
    for path, final in finals.items():
        if path in disk:
            own = disk[path]
            if own is not None:
                transaction.write(path, own.encode(own.text), own.mode)
            continue
        if final is None or path in skip:
            continue
        data = final.encode(final.text)
        original = originals.get(path)
        # An unsaved buffer is not what the disk holds: its text is written even if unchanged.
        if original is None or path in changeset.unsaved or not _encodes_to(original, final, data):
            transaction.write(path, data, final.mode)
    for path, final in finals.items():
        if final is None and originals.get(path) is not None:
            transaction.delete(path)
    transaction.commit(first)
    return transaction


def _encodes_to(original: TextFile, final: TextFile, data: bytes) -> bool:
    """Whether ``original`` is ``data`` on disk (``final``'s bytes). In the same encoding
    and BOM that is equal text, which needs no second encode of a large file."""
    if original.encoding == final.encoding and original.bom == final.bom:
        return original.text == final.text
    return original.encode(original.text) == data


def editor_changes(
    ctx: ToolContext,
    changeset: ChangeSet,
    described: list[Described],
    unsaved_kept: frozenset[Path] = frozenset(),
) -> list[PreparedChange]:
    """The files the editor holds that the set leaves in place, as editor changes."""
    originals, finals = changeset.originals(), changeset.finals()
    # A file changed once keeps its diff; composed or moved files are diffed as a whole.
    single = {d.change.path: d for d in described if d.change.move_to is None}
    counts: dict[Path, int] = {}
    for change in changeset.changes:
        for path in {change.path, change.target}:
            counts[path] = counts.get(path, 0) + 1
    changes: list[PreparedChange] = []
    for path, final in finals.items():
        if final is None or not ctx.editor.holds(path):
            continue
        before = originals.get(path)
        own = single.get(path)
        if own is not None and counts[path] == 1:
            diff, edit = own.diff, {"documentChanges": own.document_changes}
        else:
            rel = relative(path, ctx.worktree)
            diff = diff_texts(before.text if before else "", final.text, rel)
            edit = workspace_edit(path.as_uri(), diff.edits)
        change = FileChange(path, before, final, kind="update" if before else "add")
        save = path not in unsaved_kept
        with_unsaved = save and path in changeset.unsaved  # the person chose "save"
        changes.append(
            PreparedChange(change, diff, edit=edit, save=save, with_unsaved=with_unsaved)
        )
    return changes


@dataclass
class _EditorWrite:
    prepared: PreparedChange
    disk_before: bytes | None


def _disk_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


@dataclass
class UnsavedPlan:
    """Where the change to files with unsaved buffers goes."""

    disk: dict[Path, TextFile | None] = field(default_factory=dict)  # None: leave the disk
    kept: frozenset[Path] = frozenset()  # buffers that get the change and stay unsaved
    dropped: frozenset[Path] = frozenset()  # changed nowhere (the editor cannot take it)
    notes: list[str] = field(default_factory=list)


def plan_unsaved(
    ctx: ToolContext,
    changeset: ChangeSet,
    reply: PermissionReply | None,
    rebased_texts: dict[Path, Rebased],
) -> UnsavedPlan:
    """The user's unsaved text never reaches the disk, unless they chose to save it."""
    plan = UnsavedPlan()
    kept: set[Path] = set()
    dropped: set[Path] = set()
    finals = changeset.finals()
    choice = reply.unsaved if reply is not None else None
    for path, rebased in rebased_texts.items():
        final = finals[path]
        assert final is not None
        held = ctx.editor.holds(path)
        rel = relative(path, ctx.worktree)
        if rebased.text is not None:
            plan.disk[path] = dataclasses.replace(final, text=rebased.text)
            if held:
                kept.add(path)
            continue
        if choice == "save":
            plan.notes.append(
                f"Note: {rel} had unsaved changes by the user where your edit overlaps them; "
                "the user chose to save their changes together with yours."
            )
            continue  # the buffer is saved as it stands (held), or its text written
        plan.disk[path] = None
        if held:
            kept.add(path)
            plan.notes.append(
                f"Note: {rel} has unsaved changes by the user that overlap your edit, so your "
                "edit was applied in the editor only: the buffer holds it (unsaved), and the "
                "file on disk was not changed. A read serves the buffer."
            )
        else:
            dropped.add(path)
            plan.notes.append(
                f"{rel} was not changed: it has unsaved changes by the user that overlap your "
                "edit, and the editor cannot take edits. Ask the user to save or discard them."
            )
    plan.kept, plan.dropped = frozenset(kept), frozenset(dropped)
    return plan


async def _write(
    ctx: ToolContext,
    changeset: ChangeSet,
    described: list[Described],
    patch: bool,
    unsaved: UnsavedPlan,
) -> list[PreparedChange]:
    """Disk first (one transaction), then each file the editor holds; all or nothing."""
    through_editor = editor_changes(ctx, changeset, described, unsaved.kept)
    skip = frozenset(p.change.path for p in through_editor) | unsaved.dropped
    touched = [ctx.real(p) for p in dict.fromkeys([*changeset.originals(), *changeset.finals()])]

    def keep() -> None:  # the turn keeps what they hold now, to put it back (undo)
        if ctx.turn is not None:
            ctx.turn.keep(touched, ctx.tool)

    def keep_and_write() -> Transaction:  # one worker thread for both (a hop costs a wake-up)
        return disk_transaction(changeset, skip, ctx.abort.check, unsaved.disk, ctx.real, keep)

    try:
        transaction = await ctx.run_blocking(keep_and_write)
    except TransactionFailed as error:
        if patch:
            raise ToolError(failures.patch_transaction_failed(error, ctx.worktree)) from error
        raise ToolError(failures.write_failed(error.path, error.reason)) from error
    done: list[_EditorWrite] = []
    try:  # the transaction holds big files' old inodes open until then
        for prepared in through_editor:
            path = prepared.change.path
            write = _EditorWrite(prepared, await ctx.run_blocking(_disk_bytes, path))
            try:
                await ctx.editor.write_change(ctx, prepared)
            except BaseException as error:
                if not isinstance(error, EditorRefusal):
                    done.append(write)  # it may have reached the buffer before failing
                stuck = await _undo(ctx, done)
                restored, unrestored = transaction.rollback()
                if isinstance(error, EditorRefusal):
                    reason = failures.refused(path, prepared.diff.edits, error)
                elif isinstance(error, OSError):
                    reason = error.strerror or str(error)
                    if not patch:
                        raise ToolError(failures.write_failed(path, reason)) from error
                else:
                    raise  # cancellation and bugs: put back, then passed on
                if not patch:
                    raise ToolError(reason) from error
                changed = restored + [w.prepared.change.path for w in done]
                message = failures.patch_editor_failed(
                    reason, ctx.worktree, changed, unrestored + stuck
                )
                raise ToolError(message) from error
            done.append(write)
    finally:
        transaction.close()
    if ctx.turn is not None and all(p in transaction.written for p in touched):
        ctx.turn.wrote(touched, transaction.written)  # hashed for its journal: no disk read
    elif ctx.turn is not None:  # the editor's writes (and deletions) are looked at on disk
        await ctx.run_blocking(ctx.turn.wrote, touched, transaction.written)
    return through_editor


async def _undo(ctx: ToolContext, done: list[_EditorWrite]) -> list[tuple[Path, str]]:
    stuck: list[tuple[Path, str]] = []
    for write in reversed(done):
        path = write.prepared.change.path
        try:
            await ctx.editor.undo_change(ctx, write.prepared, write.disk_before)
        except EditorRefusal as error:
            stuck.append((path, "the editor refused to undo the change"))
            log.warning("undo of %s failed: %s", path, error.reason)
        except OSError as error:
            stuck.append((path, error.strerror or str(error)))
    return stuck


# --- the pipeline -----------------------------------------------------------------------------


@dataclass
class Committed:
    metadata: dict[str, Any]  # diff, filediff, files, edit and diagnostics (by URI)
    diagnostics: dict[Path, list[dict[str, Any]]] = field(default_factory=dict)  # new errors
    notes: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)  # metadata.files
    changeset: ChangeSet | None = None  # what was written: the set the review left

    @property
    def note_text(self) -> str:
        return "".join(f"\n\n{note}" for note in self.notes)


async def commit(
    ctx: ToolContext,
    changeset: ChangeSet,
    *,
    title: str,
    ask_metadata: dict[str, Any] | None = None,
    other_files: bool = False,
    patch: bool = False,
) -> Committed:
    """Ask once for the whole set, write it all or nothing, and report what it introduced.

    ``title`` and ``ask_metadata`` (e.g. ``filepath``) are the tool's words for the ask.
    ``other_files``: also report new errors in the other files the editor has open
    (``write``).  ``patch``: failures are worded for a patch (which files were put back).
    """
    described = await _describe_all(ctx, changeset)
    # Without unsaved buffers the plan reads no disk: a small one is not worth a thread.
    inline = not changeset.unsaved and sum(len(d.unified) for d in described) < THREAD_DIFF_CHARS
    at = (changeset, described, ctx.worktree)
    plan = review.plan(*at) if inline else await ctx.run_blocking(review.plan, *at)
    reply = await _ask(ctx, changeset, described, title, ask_metadata or {}, plan)
    narrowed = review.narrow(changeset, plan, reply, ctx.worktree)
    # A review may take minutes: files changed meanwhile get the change on their new text.
    refreshed = fresh.Refreshed(narrowed.changeset)
    if reply is not None:
        still = frozenset(p for p in changeset.unsaved if ctx.editor.unsaved_text(p) is not None)
        refreshed = await ctx.run_blocking(
            fresh.onto_current, narrowed.changeset, ctx.worktree, ctx.real, still
        )
    if refreshed.changeset is not changeset:
        changeset = refreshed.changeset
        described = await _describe_all(ctx, changeset)
    rebased = await ctx.run_blocking(review.rebase_unsaved, changeset) if changeset.unsaved else {}
    unsaved = plan_unsaved(ctx, changeset, reply, rebased)
    if unsaved.dropped and set(changeset.finals()) <= unsaved.dropped:
        raise ToolError(" ".join(unsaved.notes) + " Nothing was written.")
    kept = [p for p in changeset.kept() if p not in unsaved.dropped]
    others = [p for p in ctx.editor.open_documents() if p not in kept] if other_files else []
    watch = DiagnosticsWatch(ctx, kept, others)
    await watch.baseline()
    through_editor = await _write(ctx, changeset, described, patch, unsaved)
    written = [p for p in unsaved.kept if unsaved.disk.get(p) is not None]
    ctx.editor.disk_written(written)
    for path, final in changeset.finals().items():
        if final is not None and changeset.originals().get(path) is None:
            ctx.editor.prewarm(path)  # a new file: the editor's language servers can check it
    noted = {p.change.path for p in through_editor if p.note}
    for path in changeset.finals():
        if path in noted:  # the editor saved other content: it must be read first
            ctx.session.read_stamps.pop(str(path), None)
        else:
            ctx.session.record_read(path)  # a deleted path loses its stamp
    new = await watch.introduced()
    files = [_file_entry(d, ctx.worktree) for d in described]
    metadata = {
        "diff": "\n".join(d.unified for d in described if d.unified),
        "filediff": [
            {"file": d.diff.path, "additions": d.diff.additions, "deletions": d.diff.deletions}
            for d in described
        ],
        "edit": {"documentChanges": [dc for d in described for dc in d.document_changes]},
        "diagnostics": diagnostics.to_metadata(new),
    }
    current = {p: f.text for p, f in changeset.finals().items() if f is not None}
    notes = [
        *refreshed.notes,
        *review.report(narrowed, current),
        *unsaved.notes,
        *(p.note for p in through_editor if p.note),
    ]
    return Committed(metadata, new, notes, files, changeset)


async def commit_file(
    ctx: ToolContext,
    path: Path,
    before: TextFile | None,
    after: str,
    unsaved: bool,
    *,
    other_files: bool = False,
    bom: bool = False,
) -> Committed:
    """One file's whole new text, as ``edit``, ``write`` and ``multiedit`` change it:
    asked as ``Edit <path>`` (a new file: ``Create <path> (new file)``), with the path in
    the ask's metadata. ``bom``: a new file is written with a UTF-8 BOM (its content
    started with one)."""
    rel = relative(path, ctx.worktree)
    return await commit(
        ctx,
        single_file(new_text(path, before, after, bom=bom), unsaved),
        title=f"Edit {rel}" if before is not None else f"Create {rel} (new file)",
        ask_metadata={"filepath": str(path)},
        other_files=other_files,
    )


__all__ = [
    "ChangeSet",
    "Committed",
    "DiagnosticsWatch",
    "FileChange",
    "commit",
    "commit_file",
    "describe",
    "locked",
]
