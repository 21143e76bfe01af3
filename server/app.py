"""Wiring: the toolhost language server's handlers (lifecycle, document sync, the
``tools/*`` and ``permission/*`` methods), and serving it over stdio, TCP or WebSocket.

Handlers only translate.  The tool framework (pydantic-core, the built-in tools) is
loaded after ``initialize`` has been answered, on the first call that needs it, so
an editor gets its ``initialize`` answer as fast as from a bare pygls server.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server.sidecar import ToolhostServer, settle_memory

if TYPE_CHECKING:
    from types import ModuleType

log = logging.getLogger("toolhost.server")

# How long running calls may take to finish once the client has closed our input.
WIND_DOWN_SECONDS = 10.0
GC_FALLBACK_SECONDS = 30.0
# The attach socket opens then at the latest, even while the first load runs on.
DEFERRED_AT_MOST_SECONDS = 1.0


def _handlers() -> ModuleType:
    # Imported on the first request (it brings the tool framework), then looked up:
    # an import statement costs a trip through the import system every time.
    loaded = sys.modules.get("server.handlers")
    if loaded is not None:
        return loaded
    from server import handlers

    return handlers


def create_server() -> ToolhostServer:
    server = ToolhostServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: ToolhostServer, params: types.InitializeParams) -> None:
        """LSP handler for initialize: remember the worktree and options."""
        ls.on_initialize(params)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ToolhostServer, params: types.InitializedParams) -> None:
        """LSP handler for initialized: load the tools while the client settles."""
        state = ls.state
        # What can wait does, until the first calls (which wait for the same load) are
        # answered: nothing needs it sooner, and it would otherwise come before them. A
        # load that runs on (npm for custom tools) or fails is the calls' to report.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(state.ready(), DEFERRED_AT_MOST_SECONDS)
        await asyncio.sleep(0)  # the calls the load woke run first
        if ls.attachable:  # the socket ``toolhost mcp`` attaches through, unless closed
            from server.attach.listener import AttachListener

            ls.attach = AttachListener(ls)
            await ls.attach.start()
        if ls.owns_process:  # last: what the listener imported is kept out of collections too
            settle_memory()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: ToolhostServer, params: Any) -> None:
        """LSP handler for shutdown: stop watching files."""
        ls.stop_state()

    @server.feature(types.EXIT)
    def exit_(ls: ToolhostServer, params: Any) -> None:
        """LSP handler for exit (also without shutdown first)."""
        ls.stop_state()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ToolhostServer, params: types.DidOpenTextDocumentParams) -> None:
        """LSP handler for textDocument/didOpen."""
        ls.documents.opened(params.text_document.uri, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ToolhostServer, params: types.DidChangeTextDocumentParams) -> None:
        """LSP handler for textDocument/didChange."""
        ls.documents.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: ToolhostServer, params: types.DidSaveTextDocumentParams) -> None:
        """LSP handler for textDocument/didSave (a person's save: never undone)."""
        ls.documents.saved(params.text_document.uri)
        ls.saved_by_user(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ToolhostServer, params: types.DidCloseTextDocumentParams) -> None:
        """LSP handler for textDocument/didClose."""
        ls.documents.closed(params.text_document.uri)

    @server.feature("tools/list")
    async def tools_list(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        """toolhost handler for tools/list (async: it waits for the first config load)."""
        listing: dict[str, Any] = await _handlers().tools_list(ls, params)
        return listing

    @server.feature("permission/rules")
    async def permission_rules(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        rules: dict[str, Any] = await _handlers().permission_rules(ls, params)
        return rules

    @server.feature("permission/revoke")
    async def permission_revoke(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        revoked: dict[str, Any] = await _handlers().permission_revoke(ls, params)
        return revoked

    @server.feature("turn/begin")
    async def turn_begin(ls: ToolhostServer, params: Any) -> None:
        """toolhost notification turn/begin: the calls that follow are one turn."""
        await _handlers().turn_begin(ls, params)

    @server.feature("checkpoints/list")
    async def checkpoints_list(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        listed: dict[str, Any] = await _handlers().checkpoints_list(ls, params)
        return listed

    @server.feature("checkpoints/restore")
    async def checkpoints_restore(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        restored: dict[str, Any] = await _handlers().checkpoints_restore(ls, params)
        return restored

    @server.feature("checkpoints/diff")
    async def checkpoints_diff(ls: ToolhostServer, params: Any) -> dict[str, Any]:
        diff: dict[str, Any] = await _handlers().checkpoints_diff(ls, params)
        return diff

    @server.feature("tools/execute")
    async def tools_execute(params: Any) -> dict[str, Any]:
        """toolhost handler for tools/execute (async, so $/cancelRequest interrupts it).

        It takes no ``ls`` parameter, so pygls calls it without a wrapper of its own:
        the most frequent request has one coroutine less to go through."""
        result: dict[str, Any] = await _handlers().tools_execute(server, params)
        return result

    server.protocol.start_eagerly_when(
        "tools/execute", lambda params: _handlers().starts_eagerly(server, params)
    )

    return server


async def serve_stdio(server: ToolhostServer) -> None:
    from server.stdio import open_stdio, private_stdio

    stdin, stdout = private_stdio()
    server.attachable = True  # the listener starts after initialized (see there)
    reader, writer = await open_stdio(stdin, stdout, server.protocol)
    await reader.closed
    server.attachable = False
    if server.attach is not None:
        server.attach.close()
    await server.protocol.wind_down(WIND_DOWN_SECONDS)
    server.stop_state()
    await writer.drain()


def _is_bind_failure(error: OSError) -> bool:
    import errno

    return error.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)


def run(
    server: ToolhostServer,
    transport: str,
    host: str = "",
    port: int = 0,
    *,
    origins: tuple[str, ...] = (),
) -> int:
    """Serve until ``exit`` or end of input; the process exit code.

    ``--tcp`` and ``--ws`` get a fresh token, written to the lock file once they
    listen (``server.lockkeeper``); ``origins``: browser origins a WebSocket may come from.
    """
    from server.logs import forward_to_client

    server.owns_process = True

    async def main() -> None:
        from server.children import watch_children_by_pidfd

        loop = asyncio.get_running_loop()
        forward_to_client(server, loop)
        watch_children_by_pidfd()
        loop.call_later(GC_FALLBACK_SECONDS, gc.enable)  # in case the tools never load
        if transport == "stdio":
            await serve_stdio(server)
            return
        from server import sockets
        from server.lockfile import new_token
        from server.lockkeeper import LockKeeper

        token = new_token()
        server.lock = LockKeeper(token, "tcp" if transport == "tcp" else "ws")
        announce = server.lock.listening
        try:
            if transport == "tcp":
                await sockets.serve_tcp(server.protocol, host, port, token=token, announce=announce)
            else:
                await sockets.serve_ws(
                    server.protocol, host, port, token=token, origins=origins, announce=announce
                )
        except OSError as error:
            if not _is_bind_failure(error):
                raise
            # A person typed the address: say what happened and what to do, no traceback.
            raise SystemExit(
                f"toolhost: cannot listen on {host}:{port}: {os.strerror(error.errno or 0)}. "
                "Pick another port (0 lets the system choose one), or stop what holds it."
            ) from None

    try:
        asyncio.run(main())
    except SystemExit as exit:  # the LSP exit notification: 0 after shutdown, else 1
        if isinstance(exit.code, str):  # a transport that cannot start says why
            print(exit.code, file=sys.stderr)
            return 2
        return exit.code if isinstance(exit.code, int) else 1
    except KeyboardInterrupt:
        return 130
    finally:
        if server.lock is not None:
            server.lock.remove()
    return 0
