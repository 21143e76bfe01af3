"""One ACP session's door to toolhost: the socket its ``toolhost mcp`` attaches to.

The proxy injects ``toolhost mcp`` into the agent's ``mcpServers`` with a private
``XDG_RUNTIME_DIR`` whose only lock file is this relay's, so that ``toolhost mcp``
attaches here and nowhere else (``server.mcp.editors`` finds it as it finds an
editor).  The relay speaks the attach socket's protocol (``server.attach``): the
token first, then ``tools/list`` and ``tools/execute``, each forwarded to the
sidecar behind the proxy (``server.acp.upstream``) under this ACP session's toolhost
session id.  So every call of the agent is seen here, with its result, and the
session's permission asks name a session the proxy knows.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from server import lockfile
from server.acp.upstream import connect, toolhost_command
from server.attach.rpc import INVALID_PARAMS, Peer, RpcError
from server.lockfile import LockInfo

log = logging.getLogger("toolhost.acp")

Observer = Callable[[str, dict[str, Any], dict[str, Any]], None]


class SessionLink:
    """toolhost's side of one ACP session (``session/new`` or ``session/load``)."""

    def __init__(
        self,
        folder: Path,
        upstream: Callable[[], Awaitable[LockInfo]],
        editor: str,
        observe: Observer | None = None,
        *,
        model: str | None = None,
    ) -> None:
        self.folder = folder
        self.model = model  # "provider/model": the catalogue is offered for it
        self.upstream = upstream  # the sidecar's lock, once it is running
        self.editor = editor
        self.observe = observe
        self.toolhost_session = f"ses_acp{secrets.token_hex(10)}"
        self.acp_session: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.token = lockfile.new_token()
        self.runtime = Path(tempfile.mkdtemp(prefix="toolhost-acp-"))
        self.socket_path = self.runtime / "toolhost" / f"sidecar-{os.getpid()}.sock"
        self._server: asyncio.AbstractServer | None = None
        self._peers: set[Peer] = set()
        self._own: Peer | None = None
        self._updates: dict[str, Callable[[Any], None]] = {}  # the own calls' progress

    # -- the MCP server the agent is given ---------------------------------------

    def mcp_server(self) -> dict[str, Any]:
        """The ``session/new`` ``mcpServers`` entry (an ACP stdio ``McpServer``)."""
        command, *rest = toolhost_command()
        return {
            "name": "toolhost",
            "command": command,
            "args": [*rest, "mcp", "--cwd", str(self.folder), *self._model_args()],
            "env": [{"name": "XDG_RUNTIME_DIR", "value": str(self.runtime)}],
        }

    def _model_option(self) -> dict[str, Any]:
        provider, _, model = (self.model or "").partition("/")
        return {"model": {"providerID": provider, "modelID": model}} if model else {}

    def _model_args(self) -> list[str]:
        return ["--model", self.model] if self.model else []

    async def start(self) -> None:
        directory = self.runtime / "toolhost"
        directory.mkdir()
        os.chmod(self.runtime, 0o700)
        os.chmod(directory, 0o700)  # no umask games: the loop runs other tasks meanwhile
        self._server = await asyncio.get_running_loop().create_unix_server(
            self._connection, str(self.socket_path)
        )
        os.chmod(self.socket_path, 0o600)  # inside a 0700 folder from the start
        lock = LockInfo(
            token=self.token,
            transport="stdio",
            workspace_folders=(str(self.folder),),
            socket=str(self.socket_path),
            editor=self.editor,
        )
        lockfile.write(lock, directory=directory)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for peer in list(self._peers):
            peer.close()
        if self._own is not None:
            self._own.close()
        shutil.rmtree(self.runtime, ignore_errors=True)

    # -- the proxy's own calls (fs/write_text_file, terminal/*) -------------------

    async def _connection_of_own(self) -> Peer:
        updates = self._updates
        if self._own is None or self._own.closed.done():
            lock = await self.upstream()
            self._own = await connect(
                lock,
                self.toolhost_session,
                {"tools/update": lambda params: _dispatch(updates, params)},
                self._model_option(),
            )
        return self._own

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Any other request of the attach protocol, on this session's own connection."""
        own = await self._connection_of_own()
        return await own.request(method, params)

    async def read_text(self, path: Path) -> str | None:
        """``path`` as the agent sees it: the editor's unsaved buffer, else the disk."""
        own = await self._connection_of_own()
        try:
            found = await own.request("files/read", {"path": str(path)})
        except RpcError as error:
            log.info("files/read: %s; reading the disk", error.message)
        else:
            text = found.get("text") if isinstance(found, dict) else None
            if isinstance(text, str):
                return text
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def execute(
        self, tool: str, args: dict[str, Any], on_update: Callable[[Any], None] | None = None
    ) -> dict[str, Any]:
        """Run ``tool`` in this session, as the agent's own calls run."""
        own = await self._connection_of_own()
        updates = self._updates
        call_id = f"call_acp{secrets.token_hex(8)}"
        if on_update is not None:
            updates[call_id] = on_update
        try:
            result: dict[str, Any] = await own.request(
                "tools/execute", {"tool": tool, "args": args, "callID": call_id}
            )
        finally:
            updates.pop(call_id, None)
        if self.observe is not None:
            self.observe(tool, args, result)
        return result

    # -- ``toolhost mcp`` on the socket -------------------------------------------

    def _connection(self) -> asyncio.Protocol:
        downstream = RelayedClient(self)
        self._peers.add(downstream.peer)
        downstream.peer.closed.add_done_callback(lambda _: self._closed(downstream))
        return downstream.peer.reader  # type: ignore[return-value]

    def _closed(self, downstream: RelayedClient) -> None:
        self._peers.discard(downstream.peer)
        if downstream.upstream is not None:
            downstream.upstream.close()


def _dispatch(handlers: dict[str, Callable[[Any], None]], params: Any) -> None:
    call_id = params.get("callID") if isinstance(params, dict) else None
    handler = handlers.get(call_id) if isinstance(call_id, str) else None
    if handler is not None:
        handler(params)


class RelayedClient:
    """One ``toolhost mcp`` on the relay socket, and its connection to the sidecar."""

    def __init__(self, link: SessionLink) -> None:
        self.link = link
        self.upstream: Peer | None = None
        self.options: dict[str, Any] = {}
        self.peer = Peer(
            {
                "initialize": self.initialize,
                "shutdown": _nothing,
                "tools/list": self.tools_list,
                "tools/execute": self.tools_execute,
            },
            {"exit": lambda _: self.peer.close()},
        )
        self.peer.gate = self._gate
        self.peer.protocol()

    def _gate(self, method: str, params: Any) -> str | None:
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        token = options.get("token") if isinstance(options, dict) else None
        if method != "initialize" or not lockfile.tokens_match(token, self.link.token):
            log.warning("refused a relay connection without this session's token")
            return "The first request must be initialize with this relay's token."
        self.peer.gate = None
        self.options = options or {}
        return None

    async def initialize(self, params: Any) -> dict[str, Any]:
        lock = await self.link.upstream()
        defaults: dict[str, Any] = {
            k: self.options[k] for k in ("agent", "model") if k in self.options
        }
        self.upstream = await connect(
            lock,
            self.link.toolhost_session,
            {
                "tools/update": lambda update: self.peer.notify("tools/update", update),
                "tools/listChanged": lambda _: self.peer.notify("tools/listChanged", {}),
            },
            defaults,
        )
        self.upstream.closed.add_done_callback(lambda _: self.peer.close())
        return {
            "capabilities": {"experimental": {"toolhost": {"protocol": 1}}},
            "serverInfo": {"name": "toolhost", "version": lock.toolhost},
            "workspaceFolders": [str(self.link.folder)],
            "editor": self.link.editor,
        }

    async def tools_list(self, params: Any) -> Any:
        assert self.upstream is not None
        return await self._forward("tools/list", params)

    async def tools_execute(self, params: Any) -> Any:
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "tools/execute params must be an object")
        result = await self._forward("tools/execute", params)
        if self.link.observe is not None and isinstance(result, dict):
            args = params.get("args")
            self.link.observe(
                str(params.get("tool")), args if isinstance(args, dict) else {}, result
            )
        return result

    async def _forward(self, method: str, params: Any) -> Any:
        assert self.upstream is not None
        params = dict(params) if isinstance(params, dict) else {}
        params["sessionID"] = self.link.toolhost_session  # the session the proxy knows
        try:
            log.debug("relaying %s for %s", method, self.link.toolhost_session)
            answer = await self.upstream.request(method, params)
            log.debug("relayed %s", method)
            return answer
        except ConnectionError:
            raise RpcError(
                -32603, "toolhost's sidecar closed the connection; check the files before a retry"
            ) from None


async def _nothing(params: Any) -> None:
    return None
