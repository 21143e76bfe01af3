"""``ToolhostServer``: the pygls language server the editor speaks to, with what it knows
of its connection (the initialize params, the worktree, the open documents) and the
``ServerState`` it builds once ``initialize`` is known. ``server.app`` wires its handlers."""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcServerNotInitialized
from pygls.lsp.server import LanguageServer

from server import __version__
from server.documents import Documents, uri_to_path
from server.protocol import ToolhostProtocol

if TYPE_CHECKING:
    from server.lockkeeper import LockKeeper
    from server.state import ServerState

log = logging.getLogger("toolhost.server")


class Attachable(Protocol):
    """The socket ``toolhost mcp`` attaches through (``server.attach.listener``)."""

    async def start(self) -> None: ...

    def close(self) -> None: ...


class ToolhostServer(LanguageServer):
    protocol: ToolhostProtocol

    def __init__(self) -> None:
        super().__init__(
            "toolhost",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=ToolhostProtocol,
        )
        self.documents = Documents()
        # Set when this server owns its process (``run``): see settle_memory.
        self.owns_process = False
        self.initialize_params: types.InitializeParams | None = None
        self.worktree = Path.cwd()
        self._state: ServerState | None = None
        # An attachable (--tcp/--ws) sidecar's lock file, kept up to date.
        self.lock: LockKeeper | None = None
        # toolhost serve --trusted: the person who started it trusts the folder.
        self.trusted_by_cli = False
        # Over stdio: the socket ``toolhost mcp`` attaches through (server.attach), once
        # the tools are loaded while ``attachable``.
        self.attachable = False
        self.attach: Attachable | None = None

    def on_initialize(self, params: types.InitializeParams) -> None:
        self.initialize_params = params
        self.worktree = worktree_of(params)
        if self.lock is not None:
            folders = [self.worktree, *workspace_paths(params)]
            editor = params.client_info.name if params.client_info else None
            self.lock.initialized(list(dict.fromkeys(folders)), editor)

    @property
    def state(self) -> ServerState:
        """Options, ToolHost and session defaults, built once after ``initialize``."""
        if self._state is None:
            if self.initialize_params is None:
                raise JsonRpcServerNotInitialized("The server is not initialized yet.")
            from server.state import ServerState

            self._state = ServerState.build(
                self.initialize_params.initialization_options, self.worktree, self.trusted_by_cli
            )
            info = self.initialize_params.client_info
            self._state.host.checkpoints.client = info.name if info else "unknown"
            # Config files and custom tools load in the background (tools/* wait for it);
            # problems are shown then.
            self._state.start(self)
        return self._state

    def saved_by_user(self, uri: str) -> None:
        """The editor saved a file: what it holds now is the person's (checkpoints)."""
        path = uri_to_path(uri)
        if self._state is not None and path is not None:
            self._state.host.checkpoints.saved(path)

    def stop_state(self) -> None:
        """Stop watching files and the custom tools' Node.js host (shutdown, exit, EOF)."""
        if self._state is not None:
            self._state.stop()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log only: a server fault is answered in its response, never as a pop-up."""
        log.error("%s: %s", getattr(source, "__name__", source), error)


def workspace_paths(params: types.InitializeParams) -> list[Path]:
    """Every workspace folder the client named, as paths."""
    paths = [uri_to_path(folder.uri) for folder in params.workspace_folders or []]
    return [Path(path) for path in paths if path]


def worktree_of(params: types.InitializeParams) -> Path:
    """The first workspace folder, else rootUri/rootPath, else the process's directory."""
    uris = [folder.uri for folder in params.workspace_folders or []]
    if params.root_uri:
        uris.append(params.root_uri)
    for uri in uris:
        path = uri_to_path(uri)
        if path:
            return Path(path)
    if params.root_path:
        return Path(os.path.abspath(params.root_path))
    return Path.cwd()


def settle_memory() -> None:
    """Keep what start-up (or loading the tools) allocated out of later collections.

    ``toolhost serve`` starts with garbage collection off (server.cli); it is turned
    on here, once the tool framework is loaded and the first calls are answered (the
    ``initialized`` handler, ``server.app``): collecting among the objects of those
    imports would only slow them.
    """
    gc.freeze()
    gc.enable()
