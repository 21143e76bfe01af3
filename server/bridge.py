"""The editor as seen by a tool call: what the LSP client answers, with fallbacks.

Permission asks go to ``permission/ask`` when the client said it answers it, else
to the standard ``window/showMessageRequest`` when the client can show one, else
to the headless policy (reject, saying how to allow it).  One bridge per call, so
progress goes to that call's ``workDoneToken``.

Every other request is sent only when the client declared it in
``initializationOptions.editor`` (PROTOCOL.md); without it the base class's
fallback runs: the sidecar writes files itself, reports no diagnostics, and the
``lsp`` tool is not listed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound

from server.documents import OpenDocument, uri_to_path
from server.replies import BadReply, parse_reply
from tools.changes import diagnostics as diag
from tools.editor import Diagnostics, EditorBridge, EditorRefusal
from tools.errors import PermissionRejectedError, ToolError
from tools.fsio import atomic_write, read_text
from tools.host import new_id
from tools.paths import relative
from tools.permission import PermissionReply, PermissionRequest, ReplyKind

if TYPE_CHECKING:
    from server.app import ToolhostServer
    from tools.changes.changeset import PreparedChange
    from tools.changes.positions import PositionEncoding
    from tools.context import ToolContext

log = logging.getLogger("toolhost.bridge")

# Beyond waitMs, how long an editor may take to answer before it counts as not answering.
ANSWER_GRACE_SECONDS = 2.0
LSP_TIMEOUT_SECONDS = 60.0
NO_SERVER = "No LSP server available for this file type."
# After workspace/applyEdit: how long to wait for the editor's didChange (so the next
# call sees the edited buffer) and for editor/saveDocuments.
SETTLE_SECONDS = 1.0
SAVE_TIMEOUT_SECONDS = 10.0
BOM_CHAR = "\ufeff"


class LspEditorBridge(EditorBridge):
    def __init__(
        self,
        server: ToolhostServer,
        flags: frozenset[str],
        work_done_token: int | str | None = None,
        message_id: str = "",
    ) -> None:
        super().__init__()
        self.server = server
        self.flags = flags
        self.work_done_token = work_done_token
        self.message_id = message_id  # echoed in updates (PROTOCOL: tools/execute)

    def capabilities(self) -> frozenset[str]:
        return self.flags

    def position_encoding(self) -> str:
        return encoding_of(self.server)

    def unsaved_text(self, path: Path | str) -> str | None:
        return self.server.documents.unsaved_text(path, self.server.workspace)

    def prewarm(self, path: Path | str) -> None:
        if "openDocument" in self.flags:  # best effort: the answer is never awaited
            uri = Path(path).as_uri()
            self.server.protocol.send_request("editor/openDocument", {"uri": uri})

    # --- edits through the editor ---------------------------------------------------------

    def holds(self, path: Path) -> bool:
        return (
            "applyEdit" in self.flags
            and self.server.documents.snapshot(path, self.server.workspace) is not None
        )

    async def write_change(self, ctx: ToolContext, prepared: PreparedChange) -> None:
        if not self.holds(prepared.change.path):
            await super().write_change(ctx, prepared)
        elif not await write_through_editor(self.server, ctx, prepared):
            await super().write_change(ctx, prepared)  # the editor's copy was stale

    async def undo_change(
        self, ctx: ToolContext, prepared: PreparedChange, disk_before: bytes | None
    ) -> None:
        if prepared.via_editor and self.holds(prepared.change.path):
            await undo_through_editor(self.server, ctx, prepared)
        await super().undo_change(ctx, prepared, disk_before)

    # --- diagnostics and LSP requests ----------------------------------------------------

    def open_documents(self) -> list[Path]:
        return self.server.documents.open_paths()

    async def diagnostics(
        self, paths: list[Path], wait_ms: int | None = None
    ) -> Diagnostics | None:
        if "diagnostics" not in self.flags or not paths:
            return {}
        wait = self.server.state.options.diagnostics_wait_ms if wait_ms is None else wait_ms
        params = {"uris": [path.as_uri() for path in paths], "waitMs": wait}
        try:
            answer = await asyncio.wait_for(
                self.server.protocol.request("editor/diagnostics", params),
                wait / 1000 + ANSWER_GRACE_SECONDS,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:  # no answer in time, or an error: no report
            log.warning("editor/diagnostics failed: %s", error or type(error).__name__)
            return None
        return diagnostics_by_path(answer, paths)

    async def lsp_request(self, method: str, params: dict[str, Any]) -> Any:
        if "lsp" not in self.flags:
            return await super().lsp_request(method, params)
        try:
            return await asyncio.wait_for(
                self.server.protocol.request("editor/lsp", {"method": method, "params": params}),
                LSP_TIMEOUT_SECONDS,
            )
        except TimeoutError:
            raise ToolError(
                f"The editor's language server did not answer {method} within "
                f"{LSP_TIMEOUT_SECONDS:.0f} seconds. Try again later, or use grep and read.",
                kind="timeout",
            ) from None
        except JsonRpcMethodNotFound:
            raise ToolError(NO_SERVER) from None
        except JsonRpcException as error:
            raise ToolError(
                f"The editor's language server could not answer {method}: {error.message}"
            ) from None
        except (ConnectionError, RuntimeError) as error:  # the client went away
            raise ToolError(f"The editor could not be asked ({error}).") from None

    async def ask_questions(self, request: dict[str, Any]) -> list[list[str]] | None:
        if "question" not in self.flags:
            return await super().ask_questions(request)
        try:
            answer = await self.withdrawable("editor/question", {"id": new_id("que"), **request})
        except asyncio.CancelledError:
            raise
        except JsonRpcException as error:
            raise ToolError(
                f"The editor could not show the question ({error.message}). Decide with what "
                "you know, and say in your answer what you assumed."
            ) from None
        except (ConnectionError, RuntimeError) as error:
            raise ToolError(f"The editor could not be asked ({error}).") from None
        return question_answers(answer, len(request["questions"]))

    async def run_task(self, request: dict[str, Any]) -> str:
        if "task" not in self.flags:
            return await super().run_task(request)
        try:
            answer = await self.withdrawable("agent/task", {"id": new_id("tsk"), **request})
        except asyncio.CancelledError:
            raise
        except JsonRpcException as error:
            raise ToolError(error.message) from None
        except (ConnectionError, RuntimeError) as error:
            raise ToolError(f"the editor could not be reached ({error})") from None
        output = answer.get("output") if isinstance(answer, Mapping) else None
        if not isinstance(output, str):
            raise ToolError(
                f"the editor answered agent/task without an output text: {answer!r:.200}"
            )
        return output

    async def withdrawable(self, method: str, params: dict[str, Any]) -> Any:
        """A request the call's cancel withdraws: ``$/cancelRequest``, and
        ``editor/withdrawn {method, id}`` for clients that cannot map JSON-RPC ids to
        their prompts (Neovim's handlers are not told the id)."""
        try:
            return await self.server.protocol.request(method, params)
        except asyncio.CancelledError:
            self.server.protocol.notify("editor/withdrawn", {"method": method, "id": params["id"]})
            raise

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        if "permissionAsk" in self.flags:
            return await self._ask_client(request)
        if self._can_show_message_request():
            return await self._ask_user(request)
        return await super().ask_permission(request)

    def notify_update(self, update: dict[str, Any]) -> None:
        if self.message_id:
            update = {"messageID": self.message_id, **update}
        self.server.protocol.notify("tools/update", update)
        if self.work_done_token is not None:
            self._progress(types.WorkDoneProgressReport(message=update.get("title")))

    def begin_progress(self, title: str) -> None:
        if self.work_done_token is not None:
            self._progress(types.WorkDoneProgressBegin(title=title))

    def end_progress(self) -> None:
        if self.work_done_token is not None:
            self._progress(types.WorkDoneProgressEnd())

    def _progress(self, value: Any) -> None:
        token = self.work_done_token
        assert token is not None
        self.server.protocol.notify(types.PROGRESS, types.ProgressParams(token=token, value=value))

    def _can_show_message_request(self) -> bool:
        window = self.server.client_capabilities.window
        return window is not None and window.show_message is not None

    async def _ask_client(self, request: PermissionRequest) -> PermissionReply:
        try:
            params = request.to_wire()
            if request.message_id:
                params = {"messageID": request.message_id, **params}
            answer = await self.server.protocol.request("permission/ask", params)
        except asyncio.CancelledError:
            # Answered elsewhere, or the call was cancelled: the client drops its prompt.
            self.server.protocol.notify("permission/withdrawn", {"id": request.id})
            raise
        except Exception as error:
            log.warning("permission/ask for %s failed: %s", request.tool, error)
            raise PermissionRejectedError(
                f"The editor could not answer the permission request for this call ({error}), "
                "so it was not run."
            ) from None
        try:
            return parse_reply(answer)
        except BadReply as error:
            log.warning("permission/ask answered with %.300r: %s", answer, error)
            raise PermissionRejectedError(
                f"The editor's answer to the permission request was not understood ({error}), "
                "so the call was not run."
            ) from None

    def show_message(self, message: str) -> None:
        log.warning("%s", message)
        self.server.protocol.notify(
            types.WINDOW_SHOW_MESSAGE,
            types.ShowMessageParams(type=types.MessageType.Warning, message=f"toolhost: {message}"),
        )

    def disk_written(self, paths: list[Path]) -> None:
        if paths:
            self.server.protocol.notify(
                "editor/diskWritten", {"uris": [path.as_uri() for path in paths]}
            )

    async def _ask_user(self, request: PermissionRequest) -> PermissionReply:
        # "Always" says what it would cover: the ask's first (narrowest) option.
        options = request.options()
        always = f"Always allow: {options[0].label}" if options else ""
        actions: dict[str, ReplyKind] = {"Allow once": "once"}
        if always:
            actions[always] = "always"
        actions["Reject"] = "reject"
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"{request.title}\n{request.tool} asks for the `{request.permission}` "
            f"permission on: {', '.join(request.patterns)}",
            actions=[types.MessageActionItem(title=title) for title in actions],
        )
        try:
            chosen = await self.server.protocol.request(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("window/showMessageRequest for %s failed: %s", request.tool, error)
            chosen = None
        title = getattr(chosen, "title", None)
        # Dismissed, or a button we did not offer: no.
        return PermissionReply(actions.get(title, "reject") if isinstance(title, str) else "reject")


def question_answers(answer: Any, count: int) -> list[list[str]] | None:
    """``{answers: [[label, ...], ...]}`` checked; None when the user dismissed it."""
    if answer is None or (isinstance(answer, Mapping) and answer.get("dismissed") is True):
        return None
    answers = answer.get("answers") if isinstance(answer, Mapping) else None
    if not isinstance(answers, list) or not all(
        isinstance(one, list) and all(isinstance(label, str) for label in one) for one in answers
    ):
        log.warning("editor/question answered with %.200r", answer)
        raise ToolError(
            "The editor answered the question with something other than one list of labels "
            "per question, so the answer is unknown. Ask again, or decide with what you know."
        )
    return [list(one) for one in answers[:count]]


def diagnostics_by_path(answer: Any, asked: list[Path]) -> Diagnostics:
    """``{items: [{uri, diagnostics}]}`` -> {path: diagnostics}, under the paths asked for."""
    items = answer.get("items") if isinstance(answer, Mapping) else None
    if not isinstance(items, list):
        log.warning("editor/diagnostics answered without an items list: %.200r", answer)
        return {}
    by_real = {os.path.realpath(path): path for path in asked}
    found: Diagnostics = {}
    for item in items:
        uri = item.get("uri") if isinstance(item, Mapping) else None
        real = uri_to_path(uri) if isinstance(uri, str) else None
        if real is None:
            continue
        path = by_real.get(real, Path(real))
        found.setdefault(path, []).extend(diag.clean(item.get("diagnostics")))
    return found


# --- edits through the editor ------------------------------------------------------------------
#
# The edit is computed against the text the change was made from, and sent with the
# version the editor last reported for the buffer: if the user typed since, the
# editor refuses it rather than apply it to other text.  Then editor/saveDocuments,
# and the disk is checked: the editor's save is trusted when it wrote the new content
# (or anything else: a format-on-save); when it wrote nothing the sidecar writes.
# A buffer that had the user's unsaved changes is never saved (``prepared.save``).


async def write_through_editor(
    server: ToolhostServer, ctx: ToolContext, prepared: PreparedChange
) -> bool:
    """Apply ``prepared`` to the open buffer and save it; False: write the disk instead.

    False when the buffer is clean but holds other text than the change was made
    from: it is older than the disk (a command changed the file), so the editor
    will reload it from the disk.  Raises EditorRefusal when the editor refuses.
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
        await apply_edit(server, document, edits, f"toolhost {ctx.tool}: {rel}", prepared)
    prepared.via_editor = True
    if typed_since and prepared.save:
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
    await asyncio.shield(save_and_check(server, prepared, document.uri, target, disk_before))
    return True


async def undo_through_editor(
    server: ToolhostServer, ctx: ToolContext, prepared: PreparedChange
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
    server: ToolhostServer,
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
    server: ToolhostServer,
    prepared: PreparedChange,
    uri: str,
    target: str,
    disk_before: bytes | None,
) -> None:
    """editor/saveDocuments, then make sure the disk holds the change."""
    change = prepared.change
    await settle(server, change.path, target)
    try:
        await asyncio.wait_for(
            server.protocol.request("editor/saveDocuments", {"uris": [uri]}),
            SAVE_TIMEOUT_SECONDS,
        )
    except asyncio.CancelledError:
        raise
    except Exception as error:  # checked below: the sidecar writes what was not saved
        log.warning("editor/saveDocuments for %s failed: %s", uri, error or type(error).__name__)
    expected = change.encoded
    on_disk = await asyncio.to_thread(read_bytes, change.path)
    if on_disk == expected:
        return
    if on_disk == disk_before:  # the editor did not save: write it ourselves
        await asyncio.to_thread(atomic_write, change.path, expected, change.mode)
        return
    # The editor wrote something else: a format-on-save, or more of the user's typing.
    # Overwriting it would fight the editor; the model is told to look again.
    log.info("the editor saved %s with other content than the edit's", change.path)
    prepared.note = (
        f"Note: when the editor saved {change.path}, the file came out different from the "
        "edit's result (a format-on-save, or more changes made in the editor). Read the file "
        "before editing it again."
    )


async def settle(server: ToolhostServer, path: Path, text: str) -> None:
    """Wait (briefly) until the editor has told us its buffer holds ``text``."""
    deadline = asyncio.get_running_loop().time() + SETTLE_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        document = server.documents.snapshot(path, server.workspace)
        if document is None or document.text == text:
            return
        await asyncio.sleep(0.01)
    log.info("the editor did not report the edited text of %s in time", path)


def refusal(server: ToolhostServer, path: Path, reason: str) -> EditorRefusal:
    """The editor would not take the change: why, with what a read would serve now."""
    return EditorRefusal(reason, current_text(server, path))


def current_text(server: ToolhostServer, path: Path) -> str:
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


def encoding_of(server: ToolhostServer) -> PositionEncoding:
    value = server.workspace.position_encoding
    name = getattr(value, "value", value)
    if name == "utf-8":
        return "utf-8"
    return "utf-32" if name == "utf-32" else "utf-16"
