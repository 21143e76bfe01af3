"""The editor's sidecar, reachable by ``toolhost mcp``: a Unix socket beside stdio.

A sidecar that an editor started over stdio also listens on
``<runtime dir>/sidecar-<pid>.sock`` (mode 0600) and names it in its lock file
(contract A, ``server.lockfile``).  A connection must open with ``initialize``
carrying the lock file's token in ``initializationOptions.token``; anything else is refused and the
connection closed before a request runs.  After that it may call ``tools/list``
and ``tools/execute``, which run exactly as the editor's own calls do: the same
ToolHost, config and custom tools, and the editor connection's bridge, so reads
see unsaved buffers, edits go through the editor (undo, save), permission asks
become the editor's review prompts and diagnostics come from its language servers.
Progress (``tools/update``) goes to the connection that made the call, and each
connection hears ``tools/listChanged``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from server import __version__, lockfile
from server.attach.rpc import INVALID_PARAMS, Peer, RpcError
from server.documents import uri_to_path
from server.lockkeeper import LockKeeper

if TYPE_CHECKING:
    from server.options import InitOptions
    from server.sidecar import ToolhostServer

log = logging.getLogger("toolhost.attach")

LIST_CHANGED = "tools/listChanged"
MAX_SOCKET_PATH = 107  # sun_path, less the terminating NUL


class AttachListener:
    """Started once the editor's ``initialize`` is known; closed with the sidecar."""

    def __init__(self, server: ToolhostServer) -> None:
        self.server = server
        self.token = lockfile.new_token()
        self.socket_path: Path | None = None
        self.keeper = LockKeeper(self.token, "stdio")
        self._listener: asyncio.AbstractServer | None = None
        self._peers: set[Peer] = set()

    async def start(self) -> None:
        try:
            directory = lockfile.runtime_dir()
            path = directory / f"sidecar-{os.getpid()}.sock"
            if len(os.fsencode(path)) > MAX_SOCKET_PATH:
                log.warning("not listening for toolhost mcp: the socket path %s is too long", path)
                return
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            old_umask = os.umask(0o177)  # the socket is created 0600, never wider
            try:
                self._listener = await asyncio.get_running_loop().create_unix_server(
                    self._connection, str(path)
                )
            finally:
                os.umask(old_umask)
            os.chmod(path, 0o600)
            self.socket_path = path
            self.keeper.listening(socket=str(path))
            self.keeper.initialized([Path(f) for f in workspace_folders(self.server)], self.editor)
        except OSError as error:
            log.warning("not listening for toolhost mcp: %s", error)
            self.close()
            return
        self.server.state.listeners.append(self.tools_changed)
        log.info("toolhost mcp can attach through %s", path)

    @property
    def editor(self) -> str:
        params = self.server.initialize_params
        client = params.client_info.name if params and params.client_info else None
        return client or "unknown"

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for peer in list(self._peers):
            peer.close()
        self.keeper.remove()
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self.socket_path = None

    def tools_changed(self) -> None:
        for peer in list(self._peers):
            peer.notify(LIST_CHANGED, {})

    def _connection(self) -> asyncio.Protocol:
        connection = AttachedClient(self)
        self._peers.add(connection.peer)
        connection.peer.closed.add_done_callback(lambda _: self._peers.discard(connection.peer))
        return connection.peer.reader  # type: ignore[return-value]


class AttachedClient:
    """One ``toolhost mcp`` (or other local client) on the socket."""

    def __init__(self, listener: AttachListener) -> None:
        self.listener = listener
        self.server = listener.server
        self.options: dict[str, Any] = {}
        self.session_id = f"ses_attach{secrets.token_hex(10)}"
        self.peer = Peer(
            {
                "initialize": self.initialize,
                "shutdown": self.shutdown,
                "tools/list": self.tools_list,
                "tools/execute": self.tools_execute,
                "mcp/adopt": self.adopt,
                "files/read": self.files_read,
            },
            {"exit": lambda _: self.peer.close()},
        )
        self.peer.gate = self._gate
        self.peer.protocol()
        self.adopted: set[asyncio.Task[None]] = set()  # MCP clients served here (adopt)

    def _gate(self, method: str, params: Any) -> str | None:
        """The first message must be initialize with the token; then the gate opens."""
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        token = options.get("token") if isinstance(options, dict) else None
        if method != "initialize" or not isinstance(token, str):
            log.warning("refused a socket connection that did not open with the token")
            return "The first request must be initialize with initializationOptions.token."
        if not lockfile.tokens_match(token, self.listener.token):
            log.warning("refused a socket connection with a wrong token")
            return "The token does not match this sidecar's lock file."
        self.peer.gate = None
        self.options = options or {}
        return None

    async def initialize(self, params: Any) -> dict[str, Any]:
        session = self.options.get("sessionID")
        if isinstance(session, str) and session:
            self.session_id = session
        return {
            "capabilities": {"experimental": {"toolhost": {"protocol": 1}}},
            "serverInfo": {"name": "toolhost", "version": __version__},
            "workspaceFolders": workspace_folders(self.server),
            "editor": self.listener.editor,
        }

    async def shutdown(self, params: Any) -> None:
        return None

    def _defaults(self) -> dict[str, Any]:
        defaults = {"sessionID": self.session_id}
        for name in ("agent", "model"):
            if self.options.get(name) is not None:
                defaults[name] = self.options[name]
        return defaults

    async def tools_list(self, params: Any) -> dict[str, Any]:
        from server import calls
        from server.params import parse_list

        merged = {**self._defaults(), **(params if isinstance(params, dict) else {})}
        with rpc_errors():
            parsed = parse_list(merged)
        state = self.server.state
        await state.ready()
        tools = calls.listing(
            state.host,
            model=parsed.model or state.options.model,
            capabilities=state.options.editor,
            agent=parsed.agent or state.options.agent,
            session_id=parsed.session_id or self.session_id,
        )
        return {"tools": tools}

    async def adopt(self, params: Any) -> dict[str, Any]:
        from server.attach.adopt import adopt

        return await adopt(self, params)

    @property
    def editor(self) -> str:
        return self.listener.editor

    def watch_tools(self, changed: Callable[[], None]) -> Callable[[], None]:
        listeners = self.server.state.listeners
        listeners.append(changed)
        return lambda: listeners.remove(changed)

    def ended(self) -> None:
        self.peer.notify("mcp/ended", {})

    async def tools_execute(
        self, params: Any, progress: Callable[[dict[str, Any]], None] | None = None
    ) -> dict[str, Any]:
        """A call of this client; its progress to ``progress`` (default: the socket)."""
        from server import calls
        from server.params import parse_execute

        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "tools/execute params must be an object")
        with rpc_errors():
            parsed = parse_execute({**self._defaults(), **params})
        state = self.server.state
        await state.ready()
        return await calls.execute(
            state.host,
            parsed.tool,
            parsed.args,
            editor=self._bridge(parsed.message_id or "", progress),
            session_id=parsed.session_id or self.session_id,
            call_id=parsed.call_id,
            message_id=parsed.message_id or "",
            agent=parsed.agent or state.options.agent,
            model=parsed.model or state.options.model,
        )

    async def files_read(self, params: Any) -> dict[str, Any]:
        """``{path}`` -> ``{text}``: the editor's unsaved buffer of ``path``, or null when the
        editor holds none (the caller reads the disk). For ``toolhost acp``'s
        ``fs/read_text_file``."""
        path = params.get("path") if isinstance(params, dict) else None
        if not isinstance(path, str) or not os.path.isabs(path):
            raise RpcError(INVALID_PARAMS, "files/read needs an absolute path")
        await self.server.state.ready()
        return {"text": self._bridge("").unsaved_text(path)}

    def _bridge(
        self, message_id: str, progress: Callable[[dict[str, Any]], None] | None = None
    ) -> Any:
        """The editor connection's bridge, with this caller's progress sent to it."""
        report = progress or (lambda update: self.peer.notify("tools/update", update))
        return socket_call_bridge()(report, self.server, self.server.state.options, message_id)


@functools.cache
def socket_call_bridge() -> Any:
    """The bridge class of a call over the socket, made once (the bridge module loads the
    tool framework, which a sidecar that is never attached to need not import)."""
    from server.bridge import LspEditorBridge

    class SocketCallBridge(LspEditorBridge):
        def __init__(
            self,
            report: Callable[[dict[str, Any]], None],
            server: ToolhostServer,
            options: InitOptions,
            message_id: str,
        ) -> None:
            super().__init__(server, options, None, message_id)
            self.report = report

        def notify_update(self, update: dict[str, Any]) -> None:
            if self.message_id:
                update = {"messageID": self.message_id, **update}
            self.report(update)

    return SocketCallBridge


@contextlib.contextmanager
def rpc_errors() -> Any:
    """pygls's protocol errors (from server.params) as this peer's."""
    try:
        yield
    except JsonRpcException as error:
        raise RpcError(error.code, error.message) from None


def workspace_folders(server: ToolhostServer) -> list[str]:
    params = server.initialize_params
    folders = []
    for folder in (params.workspace_folders if params else None) or []:
        path = uri_to_path(folder.uri)
        if path:
            folders.append(path)
    if not folders:
        folders.append(str(server.worktree))
    return folders
