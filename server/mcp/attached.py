"""``toolhost mcp`` attached to an editor's sidecar: every call is forwarded there.

The sidecar runs the call with the editor's bridge (unsaved buffers, edits through
the editor, its review prompts and diagnostics) and sends the call's progress
back here.  When the editor closes, this backend hands over to a local one (the
same folder, served alone) and reports that the tool list changed.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from typing import Any

from server.attach.rpc import Peer, RpcError, connect_unix
from server.lockfile import LockInfo
from server.mcp.backend import Backend, CallHooks, Changed

log = logging.getLogger("toolhost.mcp")

CONNECT_SECONDS = 5.0
GONE = (
    "The editor that toolhost was attached to closed while this call ran, so whether it "
    "finished is unknown: check the files before you retry. toolhost now serves this folder "
    "on its own."
)


async def attach(
    lock: LockInfo,
    *,
    session_id: str,
    agent: str,
    model: tuple[str, str] | None,
    fallback: Callable[[], Backend],
) -> AttachedBackend | None:
    """Connect and authenticate to ``lock``'s sidecar; None (and a log line) when it fails."""
    backend = AttachedBackend(lock, fallback)
    options: dict[str, Any] = {"token": lock.token, "sessionID": session_id, "agent": agent}
    if model:
        options["model"] = {"providerID": model[0], "modelID": model[1]}
    try:
        assert lock.socket is not None
        await connect_unix(lock.socket, backend.peer, CONNECT_SECONDS, sidecar_pid=lock.pid)
        await asyncio.wait_for(
            backend.peer.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "clientInfo": {"name": "toolhost mcp"},
                    "capabilities": {},
                    "initializationOptions": options,
                },
            ),
            CONNECT_SECONDS,
        )
    except (OSError, TimeoutError, RpcError) as error:
        log.warning(
            "could not attach to %s's toolhost (pid %d): %s; serving alone",
            lock.editor,
            lock.pid,
            error,
        )
        backend.peer.close()
        return None
    backend.peer.notify("initialized", {})
    backend.peer.closed.add_done_callback(lambda _: backend.detached())
    return backend


class AttachedBackend:
    def __init__(self, lock: LockInfo, fallback: Callable[[], Backend]) -> None:
        self.lock = lock
        self.fallback = fallback
        self.on_changed: Changed | None = None
        self.alone: Backend | None = None  # set once the editor has gone
        self._calls = itertools.count(1)
        self._progress: dict[str, CallHooks] = {}
        self.peer = Peer(
            notifications={
                "tools/listChanged": lambda _: self._changed(),
                "tools/update": self._update,
            }
        )
        self.peer.protocol()

    @property
    def describe(self) -> str:
        if self.alone is not None:
            return self.alone.describe
        folders = ", ".join(self.lock.workspace_folders)
        return f"{folders} through {self.lock.editor}'s toolhost (pid {self.lock.pid})"

    async def start(self) -> None:
        return None

    # -- the editor going away -----------------------------------------------

    def detached(self) -> None:
        if self.alone is not None:
            return
        log.warning("the editor's toolhost closed; serving %s alone", self.lock.workspace_folders)
        self.alone = self.fallback()
        self.alone.on_changed = self.on_changed
        self._changed()

    def _changed(self) -> None:
        if self.on_changed is not None:
            asyncio.get_running_loop().create_task(self.on_changed())

    def _update(self, params: Any) -> None:
        call_id = params.get("callID") if isinstance(params, dict) else None
        hooks = self._progress.get(call_id) if isinstance(call_id, str) else None
        if hooks is not None:
            hooks.progress(params)

    # -- serving --------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        if self.alone is None:
            try:
                result = await self.peer.request("tools/list", {})
                tools: list[dict[str, Any]] = result["tools"]
                return tools
            except ConnectionError:
                self.detached()
        assert self.alone is not None
        return await self.alone.list_tools()

    async def call(self, tool: str, args: dict[str, Any], hooks: CallHooks) -> dict[str, Any]:
        if self.alone is not None:
            return await self.alone.call(tool, args, hooks)
        call_id = f"call_mcp{os.getpid():x}_{next(self._calls)}"
        self._progress[call_id] = hooks
        try:
            request = {"tool": tool, "args": args, "callID": call_id}
            if hooks.turn:
                request["turnID"] = hooks.turn
            result: dict[str, Any] = await self.peer.request("tools/execute", request)
        except ConnectionError:
            self.detached()
            return {"title": tool, "output": GONE, "metadata": {"error": "failed"}, "isError": True}
        except RpcError as error:
            return {
                "title": tool,
                "output": f"The editor's toolhost refused the call: {error.message}",
                "metadata": {"error": "invalid_arguments"},
                "isError": True,
            }
        finally:
            self._progress.pop(call_id, None)
        result.setdefault("metadata", {})
        result["metadata"]["attachedTo"] = {"editor": self.lock.editor, "pid": self.lock.pid}
        return result

    async def close(self) -> None:
        self.peer.close()
        if self.alone is not None:
            await self.alone.close()
