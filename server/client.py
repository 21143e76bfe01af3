"""``EditorClient``: what the adapter's helpers use of the language server that speaks to
the editor (``server.sidecar.ToolhostServer`` is the one there is), so that the bridge,
the state and the log handler type against it without importing the server itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lsprotocol import types
    from pygls.workspace import Workspace

    from server.documents import Documents
    from server.protocol import ToolhostProtocol


class EditorClient(Protocol):
    @property
    def protocol(self) -> ToolhostProtocol:
        """The JSON-RPC connection: ``notify``, ``request``, ``send_request``."""
        ...

    @property
    def documents(self) -> Documents:
        """The editor's open buffers, as its didOpen/didChange reported them."""
        ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def window_show_message(self, params: types.ShowMessageParams) -> None: ...
