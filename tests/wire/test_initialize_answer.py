"""The ``initialize`` answer written without cattrs (``server.initialize``, issue 29) is
what pygls's converter makes of the same capabilities, for what different clients offer."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from server.app import create_server
from server.initialize import plain

# What clients send (trimmed to what changes the server's capabilities): none at all,
# VS Code's kind (utf-8 offered, will-save, file operations, notebooks), Neovim's kind.
CLIENTS: dict[str, dict[str, Any]] = {
    "bare": {},
    "vscode": {
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "textDocument": {
            "synchronization": {"willSave": True, "willSaveWaitUntil": True, "didSave": True}
        },
        "workspace": {
            "workspaceFolders": True,
            "fileOperations": {"didCreate": True, "willRename": True},
        },
        "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
        "window": {"workDoneProgress": True},
    },
    "neovim": {
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": {"synchronization": {"didSave": True, "willSave": False}},
        "workspace": {"workspaceFolders": True, "applyEdit": True},
    },
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_answer_is_what_the_converter_makes_of_it(client: str) -> None:
    server = create_server()
    protocol = server.protocol
    params = protocol._converter.structure(
        {"processId": None, "rootUri": "file:///tmp", "capabilities": CLIENTS[client]},
        types.InitializeParams,
    )
    step = protocol.lsp_initialize(params)
    handler, args, _ = next(step)  # the server's own initialize handler, as pygls runs it
    handler(*args)
    with pytest.raises(StopIteration) as done:
        step.send(None)
    expected = types.InitializeResult(
        capabilities=protocol.server_capabilities, server_info=protocol.server_info
    )
    assert done.value.value == protocol._converter.unstructure(expected)
    assert done.value.value["capabilities"]["experimental"] == {"toolhost": {"protocol": 1}}


def test_plain_writes_capabilities_as_the_converter_does() -> None:
    # Beyond what toolhost registers: options that are set, left at their defaults,
    # enums, nested lists, a field whose name ends with "_" on the Python side.
    capabilities = types.ServerCapabilities(
        position_encoding=types.PositionEncodingKind.Utf8,
        text_document_sync=types.TextDocumentSyncOptions(
            open_close=True, change=types.TextDocumentSyncKind.Full, will_save=False
        ),
        hover_provider=True,
        completion_provider=types.CompletionOptions(
            trigger_characters=[".", ":"], resolve_provider=False
        ),
        semantic_tokens_provider=types.SemanticTokensOptions(
            legend=types.SemanticTokensLegend(token_types=["type"], token_modifiers=[]),
            full=types.SemanticTokensFullDelta(delta=True),
        ),
        execute_command_provider=types.ExecuteCommandOptions(commands=["a.b"]),
        workspace=types.WorkspaceOptions(
            workspace_folders=types.WorkspaceFoldersServerCapabilities(supported=True),
        ),
        experimental={"x": [1, {"y": None}]},
    )
    converter = create_server().protocol._converter
    assert plain(capabilities) == converter.unstructure(capabilities)
    spot = types.Range(start=types.Position(1, 2), end=types.Position(3, 4))
    item = types.CallHierarchyItem(
        name="f", kind=types.SymbolKind.Function, uri="file:///a", range=spot, selection_range=spot
    )
    for value in (
        types.LogMessageParams(type=types.MessageType.Info, message="m"),
        types.WorkDoneProgressBegin(title="t"),  # "kind" is kept although it is the default
        types.CallHierarchyIncomingCall(from_=item, from_ranges=[spot]),  # "from" on the wire
    ):
        assert plain(value) == converter.unstructure(value)
