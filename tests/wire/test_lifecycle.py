"""initialize, protocol faults and survival after a handler fault."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcMethodNotFound

import server
from tests.wire.conftest import TOOLHOST, WireClient, connect, make_project

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("lifecycle"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root) as client:
        yield client


async def test_initialize_result(root: Path) -> None:
    client = WireClient()
    await client.start_io(str(TOOLHOST), "serve", "--stdio")  # vscode-languageclient adds --stdio
    try:
        result = await client.initialize_session(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
        )
        assert result.server_info == types.ServerInfo("toolhost", server.__version__)
        assert result.capabilities.experimental == {"toolhost": {"protocol": 1}}
        sync = result.capabilities.text_document_sync
        assert isinstance(sync, types.TextDocumentSyncOptions)
        assert sync.open_close is True
        assert sync.change == types.TextDocumentSyncKind.Incremental
        assert sync.save == types.SaveOptions(include_text=False)
        # rootUri alone names the worktree: a relative path resolves inside it.
        read = await client.execute("read", {"filePath": "notes.txt"})
        assert "alpha" in read["output"], read
    finally:
        await client.shutdown_session()
        await client.stop()
    assert client._server is not None and client._server.returncode == 0


async def test_unknown_method_is_32601(client: WireClient) -> None:
    with pytest.raises(JsonRpcMethodNotFound, match="tools/nope"):
        await client.call("tools/nope", {})


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ([1, 2], "params must be an object, got an array"),
        ("read", "params must be an object, got a string"),
        ({"args": {}}, "`tool` is required"),
        ({"tool": 5, "args": {}}, "`tool` must be a string, got a number"),
        ({"tool": "read"}, "`args` is required"),
        ({"tool": "read", "args": ["notes.txt"]}, "`args` must be an object, got an array"),
        ({"tool": "read", "args": {}, "sessionID": 1}, "`sessionID` must be a string"),
        ({"tool": "read", "args": {}, "model": "gpt-5"}, "`model` must be an object"),
        ({"tool": "read", "args": {}, "workDoneToken": True}, "`workDoneToken` must be"),
    ],
)
async def test_execute_params_faults_are_32602(client: WireClient, params, field: str) -> None:
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await client.call("tools/execute", params)
    assert field in raised.value.message
    assert raised.value.code == -32602


async def test_list_params_fault_is_32602(client: WireClient) -> None:
    with pytest.raises(JsonRpcInvalidParams, match="`model` needs modelID"):
        await client.call("tools/list", {"model": {"providerID": "openai"}})


async def test_a_faulting_handler_is_logged_not_shown(client: WireClient, root: Path) -> None:
    # didChange for a document that was never opened makes pygls's own handler raise.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(2, (root / "ghost.txt").as_uri()),
            [types.TextDocumentContentChangeWholeDocument("boo")],
        )
    )
    result = await client.execute("read", {"filePath": "notes.txt"})
    assert "alpha" in result["output"]
    assert client.messages == []  # no window/showMessage pop-up
    assert any("ghost.txt" in m.message for m in client.log_messages), client.log_messages
