"""Changes landed through the editor: ``workspace/applyEdit`` on the open buffer, then
``editor/saveDocuments`` (or not, where the buffer holds the user's unsaved work), and
the undo of one; the disk follows in every case."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from server.documents import OpenDocument
from tools.editor import EditorRefusal, WritingCall
from tools.fsio import atomic_write, read_text
from tools.fsio.paths import relative

if TYPE_CHECKING:
    from server.client import EditorClient
    from tools.changes.changeset import PreparedChange
    from tools.changes.positions import PositionEncoding

log = logging.getLogger("toolhost.bridge")

# After workspace/applyEdit: how long to wait for the editor's didChange (so the next
# call sees the edited buffer) and for editor/saveDocuments.
SETTLE_SECONDS = 1.0
SAVE_TIMEOUT_SECONDS = 10.0
BOM_CHAR = "\ufeff"

# The edit is computed against the text the change was made from, and sent with the
# version the editor last reported for the buffer: if the user typed since, the
# editor refuses it rather than apply it to other text.  Then editor/saveDocuments,
# and the disk is checked: the editor's save is trusted when it wrote the new content
# (or anything else: a format-on-save); when it wrote nothing the sidecar writes.
# A buffer that had the user's unsaved changes is never saved (``prepared.save``),
# unless the person chose to save them with the change (``prepared.with_unsaved``):
# then the buffer is saved as it stands, typing done since the ask included, and the
# sidecar writes it only if it still stands so (never a copy from the time of the ask).


# An edit the editor refused because the user typed after it was sent is made again on
# the new text (the editor may hold an edit back while the user types in insert mode).
RETRIES = 3


async def write_through_editor(
    server: EditorClient, ctx: WritingCall, prepared: PreparedChange, retries: int = RETRIES
) -> bool:
    """Apply ``prepared`` to the open buffer and save it; False: write the disk instead.

    False when the buffer is clean but holds other text than the change was made
    from: it is older than the disk (a command changed the file), so the editor
    will reload it from the disk.  Raises EditorRefusal when the editor refuses
    (after ``retries`` attempts on a buffer the user kept typing in).
    """
    change = prepared.change
    document = server.documents.snapshot(change.path, server.workspace)
    if document is None:
        return False
    bom = BOM_CHAR if document.text.startswith(BOM_CHAR) else ""
    buffer = document.text[len(bom) :]
    base = change.before.text if change.before is not None else buffer
    assert change.after is not None, "a deletion never goes through the editor"
    proposed = change.after.text
    typed_since = buffer != base
    if typed_since:
        if not document.dirty:
            return False
        # The user typed while the change waited for review: it goes on top of their
        # typing where the two do not touch; their new text is never saved for them.
        from tools.changes.rebase import rebase  # edits only: a read never loads it

        proposed = rebase(base, proposed, buffer).text  # type: ignore[assignment]
        if proposed is None:
            raise refusal(
                server,
                change.path,
                "the user typed where the edit goes after it was prepared",
            )
    from tools.changes.diff import diff_texts  # edits only: a read never loads difflib

    rel = relative(change.path, ctx.worktree)
    target = bom + proposed
    edits = diff_texts(document.text, target, rel, position_encoding=encoding_of(server)).edits
    disk_before = await ctx.run_blocking(read_bytes, change.path)
    if edits:
        try:
            await apply_edit(server, document, edits, f"toolhost {ctx.tool}: {rel}", prepared)
        except EditorRefusal:
            if retries <= 0 or not await moved_on(server, change.path, document.version):
                raise
            log.info("%s changed in the editor while the edit waited: made again", rel)
            return await write_through_editor(server, ctx, prepared, retries - 1)
    prepared.via_editor = True
    if typed_since and prepared.save and not prepared.with_unsaved:
        # The buffer matched the disk when the change was made, so the disk gets exactly
        # the change; the buffer keeps the user's newer typing, unsaved.
        await settle(server, change.path, target)
        await asyncio.shield(
            asyncio.to_thread(atomic_write, change.path, change.encoded, change.mode)
        )
        server.protocol.notify("editor/diskWritten", {"uris": [document.uri]})
        return True
    if not prepared.save:
        # The buffer keeps the user's unsaved work: it is not saved (the pipeline writes
        # the disk's own text with the agent's change, or leaves the disk alone).
        await settle(server, change.path, target)
        return True
    # Once the editor holds the edit, the disk must follow even if the call is cancelled.
    # What it must hold: the buffer as the change left it (with the typing since, if any).
    expected = change.after.encode(proposed)
    saving = save_and_check(
        server, prepared, document.uri, target, expected, disk_before, document.text
    )
    await asyncio.shield(saving)
    return True


async def undo_through_editor(
    server: EditorClient, ctx: WritingCall, prepared: PreparedChange
) -> None:
    """Give the buffer back the text it had before ``prepared`` (not saved: the caller
    restores the disk).  Raises EditorRefusal when the editor refuses."""
    change = prepared.change
    document = server.documents.snapshot(change.path, server.workspace)
    if document is None:
        return
    bom = BOM_CHAR if document.text.startswith(BOM_CHAR) else ""
    original = bom + (change.before.text if change.before is not None else "")
    from tools.changes.diff import diff_texts

    rel = relative(change.path, ctx.worktree)
    edits = diff_texts(document.text, original, rel, position_encoding=encoding_of(server)).edits
    if edits:
        await apply_edit(server, document, edits, f"toolhost {ctx.tool}: undo {rel}", prepared)
        await settle(server, change.path, original)


async def apply_edit(
    server: EditorClient,
    document: OpenDocument,
    edits: list[dict[str, Any]],
    label: str,
    prepared: PreparedChange,
) -> None:
    """workspace/applyEdit with one versioned TextDocumentEdit; EditorRefusal when not applied."""
    params = types.ApplyWorkspaceEditParams(
        edit=types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=document.uri, version=document.version
                    ),
                    edits=[text_edit(edit) for edit in edits],
                )
            ]
        ),
        label=label,
    )
    try:
        result = await server.protocol.request(types.WORKSPACE_APPLY_EDIT, params)
    except asyncio.CancelledError:
        raise
    except Exception as error:
        message = error.message if isinstance(error, JsonRpcException) else str(error)
        reason = f"the editor answered workspace/applyEdit with an error ({message})"
        raise refusal(server, prepared.change.path, reason) from None
    applied, failure = apply_result(result)
    if not applied:
        reason = f"the editor refused it ({failure})" if failure else "the editor refused it"
        raise refusal(server, prepared.change.path, reason)


def apply_result(result: Any) -> tuple[bool, str]:
    """(applied, failureReason) of an ApplyWorkspaceEditResult, typed or plain."""
    if isinstance(result, Mapping):
        applied, failure = result.get("applied"), result.get("failureReason")
    else:
        applied = getattr(result, "applied", None)
        failure = getattr(result, "failure_reason", None)
    return applied is True, failure if isinstance(failure, str) else ""


def text_edit(edit: dict[str, Any]) -> types.TextEdit:
    start, end = edit["range"]["start"], edit["range"]["end"]
    return types.TextEdit(
        range=types.Range(
            start=types.Position(line=start["line"], character=start["character"]),
            end=types.Position(line=end["line"], character=end["character"]),
        ),
        new_text=edit["newText"],
    )


async def save_and_check(
    server: EditorClient,
    prepared: PreparedChange,
    uri: str,
    target: str,
    expected: bytes,
    disk_before: bytes | None,
    buffer_before: str,
) -> None:
    """editor/saveDocuments, then make sure the disk holds the change: ``target`` (the
    buffer's text after the edit, from ``buffer_before``), ``expected`` on disk."""
    change = prepared.change
    await settle(server, change.path, target)
    params: dict[str, Any] = {"uris": [uri]}
    document = server.documents.snapshot(change.path, server.workspace)
    if not prepared.with_unsaved and document is not None:
        # The buffer matched the disk: the editor saves it only as the change left it.
        # Typing done since the change landed is the user's, unsaved: the disk gets
        # exactly the change (an editor that reported nothing yet is asked as before).
        if document.text == target:
            params["versions"] = {uri: document.version}
        elif document.text != buffer_before:
            await asyncio.to_thread(atomic_write, change.path, expected, change.mode)
            server.protocol.notify("editor/diskWritten", {"uris": [uri]})
            return
    try:
        await asyncio.wait_for(
            server.protocol.request("editor/saveDocuments", params),
            SAVE_TIMEOUT_SECONDS,
        )
    except asyncio.CancelledError:
        raise
    except Exception as error:  # checked below: the sidecar writes what was not saved
        log.warning("editor/saveDocuments for %s failed: %s", uri, error or type(error).__name__)
    on_disk = await asyncio.to_thread(read_bytes, change.path)
    if on_disk == expected:
        return
    if on_disk == disk_before and prepared.with_unsaved and not holds(server, change.path, target):
        # The user typed on after the change landed: writing ``target`` would save part
        # of their unsaved work and not the rest. Only the editor's save may do that.
        log.info("the editor did not save %s, and its buffer moved on", change.path)
        prepared.note = (
            f"Note: the editor did not save {change.path}, so your change is in the buffer "
            "(unsaved, with the user's changes) and the file on disk was not changed."
        )
        return
    if on_disk == disk_before:  # the editor did not save: write it ourselves
        await asyncio.to_thread(atomic_write, change.path, expected, change.mode)
        if not holds(server, change.path, target):  # the user typed on: theirs, unsaved
            server.protocol.notify("editor/diskWritten", {"uris": [uri]})
        return
    # The editor wrote something else: a format-on-save, or more of the user's typing.
    # Overwriting it would fight the editor; the model is told to look again.
    log.info("the editor saved %s with other content than the edit's", change.path)
    prepared.note = (
        f"Note: when the editor saved {change.path}, the file came out different from the "
        "edit's result (a format-on-save, or more changes made in the editor). Read the file "
        "before editing it again."
    )


async def settle(server: EditorClient, path: Path, text: str) -> None:
    """Wait (briefly) until the editor has told us its buffer holds ``text``."""
    deadline = asyncio.get_running_loop().time() + SETTLE_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        document = server.documents.snapshot(path, server.workspace)
        if document is None or document.text == text:
            return
        await asyncio.sleep(0.01)
    log.info("the editor did not report the edited text of %s in time", path)


def holds(server: EditorClient, path: Path, text: str) -> bool:
    """Whether the editor's buffer of ``path`` holds ``text`` (as last reported)."""
    document = server.documents.snapshot(path, server.workspace)
    return document is not None and document.text == text


async def moved_on(server: EditorClient, path: Path, version: int) -> bool:
    """Whether the editor reports (within a moment) a newer version than ``version``."""
    deadline = asyncio.get_running_loop().time() + SETTLE_SECONDS
    while True:
        document = server.documents.snapshot(path, server.workspace)
        if document is not None and document.version != version:
            return True
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(0.01)


def refusal(server: EditorClient, path: Path, reason: str) -> EditorRefusal:
    """The editor would not take the change: why, with what a read would serve now."""
    return EditorRefusal(reason, current_text(server, path))


def current_text(server: EditorClient, path: Path) -> str:
    """What a read would serve now: the unsaved buffer, else the disk."""
    unsaved = server.documents.unsaved_text(path, server.workspace)
    if unsaved is not None:
        return unsaved.removeprefix(BOM_CHAR)
    try:
        return read_text(path).text
    except OSError:
        return ""


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def encoding_of(server: EditorClient) -> PositionEncoding:
    value = server.workspace.position_encoding
    name = getattr(value, "value", value)
    if name == "utf-8":
        return "utf-8"
    return "utf-32" if name == "utf-32" else "utf-16"
