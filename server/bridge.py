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

from server.documents import uri_to_path
from server.editor_writes import encoding_of, undo_through_editor, write_through_editor
from server.replies import BadReply, parse_reply
from tools.changes import diagnostics as diag
from tools.editor import Diagnostics, EditorBridge, WritingCall
from tools.errors import PermissionRejectedError, ToolError
from tools.host import new_id
from tools.permission.asks import PermissionReply, PermissionRequest, ReplyKind

if TYPE_CHECKING:
    from server.client import EditorClient
    from server.options import InitOptions
    from tools.changes.changeset import PreparedChange

log = logging.getLogger("toolhost.bridge")

# Beyond waitMs, how long an editor may take to answer before it counts as not answering.
ANSWER_GRACE_SECONDS = 2.0
LSP_TIMEOUT_SECONDS = 60.0
NO_SERVER = "No LSP server available for this file type."


class LspEditorBridge(EditorBridge):
    def __init__(
        self,
        server: EditorClient,
        options: InitOptions,
        work_done_token: int | str | None = None,
        message_id: str = "",
    ) -> None:
        super().__init__()
        self.server = server
        self.options = options
        self.flags = options.editor
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

    async def write_change(self, ctx: WritingCall, prepared: PreparedChange) -> None:
        if not self.holds(prepared.change.path):
            await super().write_change(ctx, prepared)
        elif not await write_through_editor(self.server, ctx, prepared):
            await super().write_change(ctx, prepared)  # the editor's copy was stale

    async def undo_change(
        self, ctx: WritingCall, prepared: PreparedChange, disk_before: bytes | None
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
        wait = self.options.diagnostics_wait_ms if wait_ms is None else wait_ms
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
