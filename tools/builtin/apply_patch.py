"""``apply_patch``: add, update, move and delete files from one patch (reference §6.5).

Unlike OpenCode, which writes file after file and can stop half way, the patch is
verified entirely first (parsed, every path resolved and checked, every new text
computed in memory), then written as one transaction: if any file cannot be
written, the files already changed are restored and nothing is left applied.

Hunks apply in order to the state the earlier hunks left, so two hunks for one
file compose instead of the later one overwriting the earlier.  A file the editor
holds with unsaved changes is patched as the editor holds it (as ``edit`` does).

Files the editor has open (and applies edits to) are changed through the editor,
after the transaction has written every other file: one ``workspace/applyEdit``
and ``editor/saveDocuments`` per open file, in patch order.  If the editor refuses
one, the open files already changed get their old text back through the editor
(unsaved) and their old bytes on disk, and the transaction is rolled back, so no
file is left changed.  The one exception: an open file whose undo the editor
refuses too (the user typed in it meanwhile) keeps the patch's text, and the
output names it.  Deletes and move sources always go through the disk.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import logging
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tools.builtin.edit import unencodable
from tools.changes import diagnostics
from tools.changes.commit import DiagnosticsWatch, FileChange, PreparedChange, prepare
from tools.changes.diff import (
    FileDiff,
    create_file_edit,
    delete_file_edit,
    diff_texts,
    trim_diff,
    workspace_edit,
)
from tools.changes.patch import (
    AddHunk,
    DeleteHunk,
    Hunk,
    PatchError,
    UpdateHunk,
    add_file_text,
    derive_new_contents,
    is_empty_patch,
    parse_patch,
)
from tools.changes.transaction import Transaction, TransactionFailed
from tools.context import ToolContext
from tools.errors import ToolError
from tools.fsio import TextFile, read_text, to_line_endings
from tools.paths import assert_external_directory, relative, resolve
from tools.result import ToolResult
from tools.tool import Annotations, define

log = logging.getLogger("toolhost.tools.apply_patch")

VERIFY = "apply_patch verification failed: "
SUCCESS = "Success. Updated the following files:"
BOM_CHAR = "\ufeff"

ChangeType = Literal["add", "update", "delete", "move"]


class ApplyPatchParams(BaseModel):
    patchText: str = Field(
        description="The whole patch, from '*** Begin Patch' to '*** End Patch', describing "
        "every file to add, update, move or delete"
    )


@dataclass
class Target:
    hunk: Hunk
    path: Path
    move_path: Path | None = None


@dataclass
class PatchChange:
    """One hunk, verified: what its file held before it and holds after it."""

    type: ChangeType
    path: Path
    before: TextFile | None  # the source as the earlier hunks left it; None: absent
    after: TextFile | None  # the target's new state; None: deleted
    move_path: Path | None = None
    replaced: TextFile | None = None  # a move's destination before it was overwritten

    @property
    def target(self) -> Path:
        return self.move_path or self.path


@dataclass
class Plan:
    changes: list[PatchChange]
    originals: dict[Path, TextFile | None]  # what each path holds now (an unsaved buffer's text)
    finals: dict[Path, TextFile | None]  # what it will hold; None: absent
    unsaved: frozenset[Path] = frozenset()  # originals that are unsaved buffers, not the disk


# --- verifying: every new text, in memory ----------------------------------------------------


class _NotAFile(Exception):
    """A directory (or device, socket...) where the patch needs a file."""


class Overlay:
    """The files as the patch's earlier hunks left them, falling back to the disk.

    ``unsaved``: the text of editor buffers with unsaved changes, which stands in
    for the disk's text of an existing file.
    """

    def __init__(self, unsaved: dict[Path, str] | None = None) -> None:
        self.originals: dict[Path, TextFile | None] = {}
        self.state: dict[Path, TextFile | None] = {}
        self.unsaved = unsaved or {}

    def get(self, path: Path) -> TextFile | None:
        if path not in self.state:
            original = _read(path)
            if original is not None and path in self.unsaved:
                original = dataclasses.replace(
                    original, text=self.unsaved[path].removeprefix(BOM_CHAR)
                )
            self.originals[path] = original
            self.state[path] = original
        return self.state[path]

    def set(self, path: Path, value: TextFile | None) -> None:
        self.get(path)  # remember the original before the first change
        self.state[path] = value


def _read(path: Path) -> TextFile | None:
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise ToolError(f"{VERIFY}Failed to read {path}: {error.strerror or error}") from error
    if not stat.S_ISREG(info.st_mode):  # reading a FIFO would block
        raise _NotAFile(path)
    try:
        return read_text(path)
    except OSError as error:
        raise ToolError(f"{VERIFY}Failed to read {path}: {error.strerror or error}") from error


def plan_patch(
    targets: list[Target], check: Callable[[], None], unsaved: dict[Path, str] | None = None
) -> Plan:
    """Apply every hunk in memory; raises ToolError before anything is written."""
    overlay = Overlay(unsaved)
    changes: list[PatchChange] = []
    for target in targets:
        check()
        hunk = target.hunk
        if isinstance(hunk, AddHunk):
            changes.append(_add(overlay, target.path, hunk))
        elif isinstance(hunk, DeleteHunk):
            changes.append(_delete(overlay, target.path))
        else:
            changes.append(_update(overlay, target.path, target.move_path, hunk))
    for path, final in overlay.state.items():
        if final is not None:
            _check_encodable(path, final)
    return Plan(changes, overlay.originals, overlay.state, frozenset(overlay.unsaved))


def _add(overlay: Overlay, path: Path, hunk: AddHunk) -> PatchChange:
    try:
        existing = overlay.get(path)
    except _NotAFile:
        raise ToolError(f"{VERIFY}Failed to add {path}: a directory is in the way") from None
    text = add_file_text(hunk)
    if existing is not None:
        # Overwriting: like write, the file keeps its encoding, BOM and mode.
        after = dataclasses.replace(existing, text=text.removeprefix(BOM_CHAR))
    elif text.startswith(BOM_CHAR):
        after = TextFile(text[1:], "utf-8", codecs.BOM_UTF8)
    else:
        after = TextFile(text)
    overlay.set(path, after)
    return PatchChange("add", path, existing, after)


def _delete(overlay: Overlay, path: Path) -> PatchChange:
    # Node's own messages, as OpenCode passes its read error through.
    try:
        existing = overlay.get(path)
    except _NotAFile:
        if path.is_dir():
            raise ToolError(f"{VERIFY}EISDIR: illegal operation on a directory, read") from None
        raise ToolError(f"{VERIFY}Failed to delete {path}: not a regular file") from None
    if existing is None:
        raise ToolError(f"{VERIFY}ENOENT: no such file or directory, open '{path}'")
    overlay.set(path, None)
    return PatchChange("delete", path, existing, None)


def _update(overlay: Overlay, path: Path, move_path: Path | None, hunk: UpdateHunk) -> PatchChange:
    try:
        before = overlay.get(path)
    except _NotAFile:
        before = None
    if before is None:
        raise ToolError(f"{VERIFY}Failed to read file to update: {path}")
    # The patch's lines are LF; a CRLF file is patched as LF and turned back.
    text = to_line_endings(before.text, False) if before.crlf else before.text
    try:
        new_text = derive_new_contents(str(path), hunk.chunks, text)
    except PatchError as error:
        raise ToolError(f"{VERIFY}Error: {error}") from error
    after = _keep_form(before, to_line_endings(new_text, True) if before.crlf else new_text)
    if move_path is None or move_path == path:
        overlay.set(path, after)
        return PatchChange("update", path, before, after)
    try:
        replaced = overlay.get(move_path)
    except _NotAFile:
        raise ToolError(
            f"{VERIFY}Failed to move {path} to {move_path}: a directory is in the way"
        ) from None
    overlay.set(move_path, after)
    overlay.set(path, None)
    return PatchChange("move", path, before, after, move_path, replaced)


def _keep_form(before: TextFile, text: str) -> TextFile:
    """The new text in the old file's encoding, BOM and mode."""
    if text.startswith(BOM_CHAR):
        # The patch put a BOM on the first line: OpenCode keeps it as a BOM.
        text = text[1:]
        if not before.bom and before.encoding == "utf-8":
            return dataclasses.replace(before, text=text, bom=codecs.BOM_UTF8)
    return dataclasses.replace(before, text=text)


def _check_encodable(path: Path, final: TextFile) -> None:
    try:
        final.encode(final.text)
    except UnicodeEncodeError as error:
        raise ToolError(
            f"{VERIFY}{path} is encoded as {unencodable(error, final.encoding)}"
        ) from error


# --- describing: diffs, file list and the WorkspaceEdit -------------------------------------


@dataclass
class Described:
    change: PatchChange
    diff: FileDiff
    unified: str  # the diff text, with rename headers for a move
    document_changes: list[dict[str, Any]]


def describe(change: PatchChange, worktree: Path) -> Described:
    rel = relative(change.path, worktree)
    old = change.before.text if change.before else ""
    new = change.after.text if change.after else ""
    uri = change.path.as_uri()
    if change.type == "delete":
        diff = diff_texts(old, "", rel, new_exists=False)
        return Described(change, diff, diff.unified, delete_file_edit(uri)["documentChanges"])
    if change.type == "add" and change.before is None:
        diff = diff_texts("", new, rel, old_exists=False)
        return Described(change, diff, diff.unified, create_file_edit(uri, new)["documentChanges"])
    if change.type != "move":
        diff = diff_texts(old, new, rel)
        return Described(change, diff, diff.unified, _text_edit(uri, diff))
    assert change.move_path is not None
    dest = relative(change.move_path, worktree)
    diff = dataclasses.replace(diff_texts(old, new, rel), path=dest)
    rename: dict[str, Any] = {"kind": "rename", "oldUri": uri, "newUri": change.move_path.as_uri()}
    if change.replaced is not None:
        rename["options"] = {"overwrite": True}
    edits = _text_edit(change.move_path.as_uri(), diff)
    return Described(change, diff, _rename_diff(diff.unified, rel, dest), [rename, *edits])


def _text_edit(uri: str, diff: FileDiff) -> list[dict[str, Any]]:
    return workspace_edit(uri, diff.edits)["documentChanges"] if diff.edits else []


def _rename_diff(unified: str, src: str, dest: str) -> str:
    """git's rendering of a move: rename headers, then the content change if any."""
    header = f"diff --git a/{src} b/{dest}\n"
    if not unified:
        return f"{header}similarity index 100%\nrename from {src}\nrename to {dest}\n"
    body = unified.split("\n", 1)[1]
    files = f"--- a/{src}\n+++ b/{src}\n"
    if body.startswith(files):
        body = f"--- a/{src}\n+++ b/{dest}\n" + body[len(files) :]
    return f"{header}rename from {src}\nrename to {dest}\n{body}"


def file_entry(item: Described, worktree: Path) -> dict[str, Any]:
    change = item.change
    entry: dict[str, Any] = {
        "filePath": str(change.path),
        "relativePath": relative(change.target, worktree),
        "type": change.type,
        "patch": item.unified,
        "additions": item.diff.additions,
        "deletions": item.diff.deletions,
    }
    if change.move_path is not None:
        entry["movePath"] = str(change.move_path)
    return entry


def summary_line(change: PatchChange, worktree: Path) -> str:
    letter = {"add": "A", "delete": "D"}.get(change.type, "M")
    return f"{letter} {relative(change.target, worktree)}"


# --- writing: all files or none ---------------------------------------------------------------


def write_plan(
    plan: Plan, check: Callable[[], None], skip: frozenset[Path] = frozenset()
) -> Transaction:
    """Write every changed file but ``skip``, then delete (so a crash part way loses no
    content).  The committed transaction is returned so that it can still be undone."""
    transaction = Transaction(check)
    writes = [(p, f) for p, f in plan.finals.items() if f is not None and p not in skip]
    for path, final in writes:
        data = final.encode(final.text)
        original = plan.originals.get(path)
        # An unsaved buffer is not what the disk holds: its text is written even if unchanged.
        if original is None or path in plan.unsaved or original.encode(original.text) != data:
            transaction.write(path, data, final.mode)
    for path, final in plan.finals.items():
        if final is None and plan.originals.get(path) is not None:
            transaction.delete(path)
    transaction.commit()
    return transaction


# --- open files: through the editor -----------------------------------------------------------


@dataclass
class EditorWrite:
    prepared: PreparedChange
    disk_before: bytes | None


def editor_changes(ctx: ToolContext, plan: Plan) -> list[PreparedChange]:
    """The files the editor has open and the patch leaves in place, as editor changes."""
    changes: list[PreparedChange] = []
    for path, final in plan.finals.items():
        if final is not None and ctx.editor.holds(path):
            before = plan.originals.get(path)
            changes.append(prepare(ctx, FileChange(path, before, final.text, form=final)))
    return changes


def _disk_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


async def write_open_files(
    ctx: ToolContext, changes: list[PreparedChange], transaction: Transaction
) -> None:
    """Apply each change through the editor; on any failure undo them all and the disk's."""
    done: list[EditorWrite] = []
    for prepared in changes:
        write = EditorWrite(prepared, await ctx.run_blocking(_disk_bytes, prepared.change.path))
        try:
            await ctx.editor.write_change(ctx, prepared)
        except BaseException as error:
            if not isinstance(error, ToolError):
                done.append(write)  # it may have reached the buffer before failing
            stuck = await _undo(ctx, done)
            restored, unrestored = transaction.rollback()
            if isinstance(error, ToolError | OSError):
                raise ToolError(
                    editor_failure_message(error, ctx.worktree, done, restored, unrestored, stuck)
                ) from error
            raise
        done.append(write)


async def _undo(ctx: ToolContext, done: list[EditorWrite]) -> list[tuple[Path, str]]:
    stuck: list[tuple[Path, str]] = []
    for write in reversed(done):
        path = write.prepared.change.path
        try:
            await ctx.editor.undo_change(ctx, write.prepared, write.disk_before)
        except ToolError as error:
            stuck.append((path, "the editor refused to undo the change"))
            log.warning("undo of %s failed: %s", path, error.message)
        except OSError as error:
            stuck.append((path, error.strerror or str(error)))
    return stuck


def editor_failure_message(
    error: ToolError | OSError,
    worktree: Path,
    done: list[EditorWrite],
    restored: list[Path],
    unrestored: list[tuple[Path, str]],
    stuck: list[tuple[Path, str]],
) -> str:
    reason = error.message if isinstance(error, ToolError) else (error.strerror or str(error))
    head = f"Failed to apply the patch: {reason}"
    left = unrestored + stuck
    if left:
        names = ", ".join(f"{relative(p, worktree)} ({why})" for p, why in left)
        return (
            f"{head}\n\nThe patch was not applied, but these files could not be put back and "
            f"may be partly changed: {names}. Read them before continuing."
        )
    changed = [relative(p, worktree) for p in restored] + [
        relative(w.prepared.change.path, worktree) for w in done
    ]
    undone = (
        f"The files already changed were put back ({', '.join(dict.fromkeys(changed))}), so "
        "no file was changed."
        if changed
        else "No file was changed."
    )
    return f"{head}\n\n{undone} Fix the cause and send the whole patch again."


def failure_message(error: TransactionFailed, worktree: Path) -> str:
    head = f"Failed to apply the patch: {error}."
    if error.unrestored:
        stuck = ", ".join(f"{relative(p, worktree)} ({why})" for p, why in error.unrestored)
        return (
            f"{head} The patch was not applied, but these files could not be restored and may "
            f"be partly changed: {stuck}. Read them before continuing."
        )
    if error.restored:
        names = ", ".join(relative(p, worktree) for p in error.restored)
        undone = f" The files already changed were restored ({names}), so no file was changed."
    else:
        undone = " No file was changed."
    return f"{head}{undone} Fix the cause and send the whole patch again."


# --- the tool ---------------------------------------------------------------------------------


def parse(patch_text: str) -> list[Hunk]:
    if not patch_text:
        raise ToolError("patchText is required")
    try:
        hunks = parse_patch(patch_text)
    except PatchError as error:
        raise ToolError(f"{VERIFY}Error: {error}") from error
    if not hunks:
        if is_empty_patch(patch_text):
            raise ToolError("patch rejected: empty patch")
        raise ToolError(f"{VERIFY}no hunks found")
    return hunks


async def resolve_targets(ctx: ToolContext, hunks: list[Hunk]) -> list[Target]:
    targets: list[Target] = []
    for hunk in hunks:
        path = resolve(hunk.path, ctx.directory)
        await assert_external_directory(ctx, path, "file")
        move_path = None
        if isinstance(hunk, UpdateHunk) and hunk.move_path:
            move_path = resolve(hunk.move_path, ctx.directory)
            await assert_external_directory(ctx, move_path, "file")
        targets.append(Target(hunk, path, move_path))
    return targets


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


async def execute(args: ApplyPatchParams, ctx: ToolContext) -> ToolResult:
    hunks = parse(args.patchText)
    targets = await resolve_targets(ctx, hunks)
    paths = {t.path for t in targets} | {t.move_path for t in targets if t.move_path}
    async with contextlib.AsyncExitStack() as locks:
        # One order for every caller, so two patches over the same files cannot deadlock.
        for path in sorted(paths, key=str):
            await locks.enter_async_context(ctx.host.sessions.file_lock(path))
        unsaved = {p: text for p in paths if (text := ctx.editor.unsaved_text(p)) is not None}
        plan = await ctx.run_blocking(plan_patch, targets, ctx.abort.check, unsaved)
        described = [describe(change, ctx.worktree) for change in plan.changes]
        files = [file_entry(item, ctx.worktree) for item in described]
        # Move destinations are asked for too: otherwise a rule that allows editing
        # only some paths could be bypassed by moving an allowed file elsewhere.
        patterns = _unique(
            [relative(t.path, ctx.worktree) for t in targets]
            + [relative(t.move_path, ctx.worktree) for t in targets if t.move_path]
        )
        await ctx.ask(
            "edit",
            patterns,
            ["*"],
            {
                "filepath": ", ".join(patterns),
                "diff": "\n".join(trim_diff(d.unified) for d in described if d.unified),
                "files": files,
            },
            title=f"Apply patch to {', '.join(patterns)}",
        )
        kept = list(dict.fromkeys(c.target for c in plan.changes if plan.finals.get(c.target)))
        watch = DiagnosticsWatch(ctx, kept, [])
        await watch.baseline()
        through_editor = editor_changes(ctx, plan)
        skip = frozenset(p.change.path for p in through_editor)
        try:
            transaction = await ctx.run_blocking(write_plan, plan, ctx.abort.check, skip)
        except TransactionFailed as error:
            raise ToolError(failure_message(error, ctx.worktree)) from error
        await write_open_files(ctx, through_editor, transaction)
        noted = {p.change.path for p in through_editor if p.note}
        for path in plan.finals:
            if path in noted:  # the editor saved other content: it must be read first
                ctx.session.read_stamps.pop(str(path), None)
            else:
                ctx.session.record_read(path)  # a deleted path loses its stamp
        new = await watch.introduced()
    summary = "\n".join([SUCCESS, *(summary_line(c, ctx.worktree) for c in plan.changes)])
    notes = "".join(f"\n\n{p.note}" for p in through_editor if p.note)
    document_changes = [dc for item in described for dc in item.document_changes]
    return ToolResult(
        title=summary,
        output=summary + diagnostics.patch_notice(kept, new) + notes,
        metadata={
            "diff": "\n".join(d.unified for d in described if d.unified),
            "files": files,
            "filediff": [
                {"file": d.diff.path, "additions": d.diff.additions, "deletions": d.diff.deletions}
                for d in described
            ],
            "edit": {"documentChanges": document_changes},
            "diagnostics": diagnostics.to_metadata(new),
        },
    )


tool = define(
    "apply_patch",
    parameters=ApplyPatchParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
