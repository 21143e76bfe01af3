"""``apply_patch``: add, update, move and delete files from one patch (reference §6.5).

Unlike OpenCode, which writes file after file and can stop half way, the patch is
verified entirely first (parsed, every path resolved and checked, every new text
computed in memory), then handed to the change pipeline (``tools.changes.commit``)
as one change set: one ask, and every file written or none (files the editor holds
go through the editor; if any file cannot be written, the others are put back).

Hunks apply in order to the state the earlier hunks left, so two hunks for one
file compose instead of the later one overwriting the earlier.  A file the editor
holds with unsaved changes is patched as the editor holds it (as ``edit`` does).
"""

from __future__ import annotations

import codecs
import dataclasses
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.arguments.model import Arguments
from tools.changes import diagnostics
from tools.changes.changeset import ChangeSet, FileChange
from tools.changes.commit import ask_patterns, commit, locked
from tools.changes.failures import unencodable
from tools.changes.load import check_writable
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
from tools.context import ToolContext
from tools.errors import ToolError
from tools.fsio import TextFile, dirfd, read_text, to_line_endings
from tools.fsio.paths import relative, resolve, resolve_once
from tools.permission.external import assert_external_directory
from tools.result import ToolResult
from tools.tool import Annotations, define

VERIFY = "apply_patch verification failed: "
SUCCESS = "Success. Updated the following files:"
BOM_CHAR = "\ufeff"


@dataclass(frozen=True, kw_only=True)
class ApplyPatchParams(Arguments):
    patchText: str
    """The whole patch, from '*** Begin Patch' to '*** End Patch', describing every file to add,
    update, move or delete"""


@dataclass
class Target:
    hunk: Hunk
    path: Path
    move_path: Path | None = None


# --- verifying: every new text, in memory ----------------------------------------------------


class _NotAFile(Exception):
    """A directory (or device, socket...) where the patch needs a file."""


class Overlay:
    """The files as the patch's earlier hunks left them, falling back to the disk.

    ``unsaved``: the text of editor buffers with unsaved changes, which stands in
    for the disk's text of an existing file.
    """

    def __init__(
        self,
        unsaved: dict[Path, str] | None = None,
        real: Callable[[Path], Path] | None = None,
    ) -> None:
        self.originals: dict[Path, TextFile | None] = {}
        self.state: dict[Path, TextFile | None] = {}
        self.unsaved = unsaved or {}
        self.real = real or resolve_once  # where each path was checked to be

    def get(self, path: Path) -> TextFile | None:
        if path not in self.state:
            original = _read(path, self.real(path))
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


def _read(path: Path, real: Path) -> TextFile | None:
    try:
        info = dirfd.lstat(real)
    except NotADirectoryError:
        return None
    except OSError as error:
        raise ToolError(f"{VERIFY}Failed to read {path}: {error.strerror or error}") from error
    if info is None:
        return None
    if not stat.S_ISREG(info.st_mode):  # reading a FIFO would block
        raise _NotAFile(path)
    check_writable(path, info)
    try:
        return read_text(path, real)
    except OSError as error:
        raise ToolError(f"{VERIFY}Failed to read {path}: {error.strerror or error}") from error


def plan_patch(
    targets: list[Target],
    check: Callable[[], None],
    unsaved: dict[Path, str] | None = None,
    real: Callable[[Path], Path] | None = None,
) -> ChangeSet:
    """Apply every hunk in memory; raises ToolError before anything is written.

    ``real``: where each path was checked to be (``ctx.real``), which is what is read."""
    overlay = Overlay(unsaved, real)
    changes: list[FileChange] = []
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
    return ChangeSet(changes, frozenset(overlay.unsaved))


def _add(overlay: Overlay, path: Path, hunk: AddHunk) -> FileChange:
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
    return FileChange(path, existing, after, kind="add")


def _delete(overlay: Overlay, path: Path) -> FileChange:
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
    return FileChange(path, existing, None, kind="delete")


def _update(overlay: Overlay, path: Path, move_path: Path | None, hunk: UpdateHunk) -> FileChange:
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
        return FileChange(path, before, after)
    try:
        replaced = overlay.get(move_path)
    except _NotAFile:
        raise ToolError(
            f"{VERIFY}Failed to move {path} to {move_path}: a directory is in the way"
        ) from None
    overlay.set(move_path, after)
    overlay.set(path, None)
    return FileChange(path, before, after, "move", move_path, replaced)


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


def summary_line(change: FileChange, worktree: Path) -> str:
    letter = {"add": "A", "delete": "D"}.get(change.kind, "M")
    return f"{letter} {relative(change.target, worktree)}"


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
    paths = [t.path for t in targets] + [t.move_path for t in targets if t.move_path]
    async with locked(ctx, paths):
        unsaved = {p: text for p in paths if (text := ctx.editor.unsaved_text(p)) is not None}
        changeset = await ctx.run_blocking(plan_patch, targets, ctx.abort.check, unsaved, ctx.real)
        patterns = ask_patterns(changeset, ctx.worktree)
        committed = await commit(
            ctx,
            changeset,
            title=f"Apply patch to {', '.join(patterns)}",
            ask_metadata={"filepath": ", ".join(patterns)},
            patch=True,
        )
    written = committed.changeset or changeset  # a review may have kept only part of it
    summary = "\n".join([SUCCESS, *(summary_line(c, ctx.worktree) for c in written.changes)])
    output = summary + diagnostics.patch_notice(written.kept(), committed.diagnostics)
    return ToolResult(
        title=summary,
        output=output + committed.note_text,
        metadata={**committed.metadata, "files": committed.files},
    )


tool = define(
    "apply_patch",
    parameters=ApplyPatchParams,
    execute=execute,
    kind="edit",
    annotations=Annotations(destructive=True, idempotent=False),
)
