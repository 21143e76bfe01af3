"""The editor as seen by a tool call: what the LSP client answers, with fallbacks.

Permission asks go to ``permission/ask`` when the client said it answers it, else
to the standard ``window/showMessageRequest`` when the client can show one, else
to the headless policy (reject, saying how to allow it).  One bridge per call, so
progress goes to that call's ``workDoneToken``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tools.editor import EditorBridge
from tools.errors import PermissionRejectedError
from tools.permission import PermissionReply, PermissionRequest

if TYPE_CHECKING:
    from server.app import ToolhostServer

log = logging.getLogger("toolhost.bridge")

# window/showMessageRequest fallback: button title -> reply.
ACTIONS = {"Allow once": "once", "Always allow": "always", "Reject": "reject"}
REPLIES = ("once", "always", "reject")


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

    def unsaved_text(self, path: Path) -> str | None:
        return self.server.documents.unsaved_text(path, self.server.workspace)

    def prewarm(self, path: Path) -> None:
        if "openDocument" in self.flags:  # best effort: the answer does not matter
            self.server.protocol.send_request("editor/openDocument", {"uri": path.as_uri()})

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
            raise
        except Exception as error:
            log.warning("permission/ask for %s failed: %s", request.tool, error)
            raise PermissionRejectedError(
                f"The editor could not answer the permission request for this call ({error}), "
                "so it was not run."
            ) from None
        reply = answer.get("reply") if isinstance(answer, dict) else None
        message = answer.get("message") if isinstance(answer, dict) else None
        if reply not in REPLIES or not (message is None or isinstance(message, str)):
            log.warning("permission/ask answered with %r; taken as a rejection", answer)
            raise PermissionRejectedError(
                "The editor answered the permission request with something other than "
                "once, always or reject, so the call was not run."
            )
        return PermissionReply(reply, message or None)

    async def _ask_user(self, request: PermissionRequest) -> PermissionReply:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"{request.title}\n{request.tool} asks for the `{request.permission}` "
            f"permission on: {', '.join(request.patterns)}",
            actions=[types.MessageActionItem(title=title) for title in ACTIONS],
        )
        try:
            chosen = await self.server.protocol.request(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("window/showMessageRequest for %s failed: %s", request.tool, error)
            chosen = None
        title = getattr(chosen, "title", None)
        return PermissionReply(ACTIONS.get(title, "reject"))  # dismissed: no
