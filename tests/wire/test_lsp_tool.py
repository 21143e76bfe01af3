"""The ``lsp`` tool: answered by the editor's language servers through ``editor/lsp``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.wire.fake_editor import FakeEditor, connect_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

MESSAGES = (f"msg_{n}" for n in itertools.count())
LOCATION = {
    "uri": "file:///somewhere/else.py",
    "range": {"start": {"line": 9, "character": 4}, "end": {"line": 9, "character": 10}},
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp") / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import util\n\nprint(util.helper())\n")
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(root: Path):
    async with connect_editor(root, {"lsp": True}) as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    if "editor" in request.fixturenames:
        request.getfixturevalue("editor").reset()


async def lsp(client: FakeEditor, operation: str, **args: Any) -> dict[str, Any]:
    arguments = {"operation": operation, "filePath": "src/main.py", "line": 3, "character": 12}
    return await client.execute("lsp", {**arguments, **args}, messageID=next(MESSAGES))


async def test_listed_only_for_a_client_that_answers_editor_lsp(
    editor: FakeEditor, root: Path
) -> None:
    assert "lsp" in await editor.tool_ids()
    async with connect_editor(root, {"applyEdit": True, "diagnostics": True}) as other:
        assert "lsp" not in await other.tool_ids()
        result = await lsp(other, "hover")
        assert result["isError"] is True
        assert "does not answer LSP requests" in result["output"]
        assert other.lsp_asks == []


async def test_go_to_definition_round_trip(editor: FakeEditor, root: Path) -> None:
    editor.lsp_answers["textDocument/definition"] = [LOCATION]

    result = await lsp(editor, "goToDefinition")

    assert result["isError"] is False, result["output"]
    path = root / "src" / "main.py"
    assert editor.lsp_asks == [
        {
            "method": "textDocument/definition",
            "params": {
                "textDocument": {"uri": path.as_uri()},
                "position": {"line": 2, "character": 11},  # 1-based in, 0-based out
            },
        }
    ]
    assert result["title"] == "goToDefinition src/main.py:3:12"
    assert result["output"] == json.dumps([LOCATION], indent=2)
    assert result["metadata"]["result"] == [LOCATION]


async def test_no_result(editor: FakeEditor) -> None:
    result = await lsp(editor, "findReferences")  # the table has no answer: null
    assert result["isError"] is False
    assert result["output"] == "No results found for findReferences"
    (ask,) = editor.lsp_asks
    assert ask["method"] == "textDocument/references"
    assert ask["params"]["context"] == {"includeDeclaration": True}


async def test_an_empty_list_is_no_result(editor: FakeEditor) -> None:
    editor.lsp_answers["textDocument/implementation"] = []
    result = await lsp(editor, "goToImplementation")
    assert result["output"] == "No results found for goToImplementation"


async def test_no_language_server_for_the_file(editor: FakeEditor) -> None:
    editor.lsp_errors["textDocument/hover"] = (-32601, "no client supports textDocument/hover")
    result = await lsp(editor, "hover")
    assert result["isError"] is True
    assert result["output"] == "No LSP server available for this file type."


async def test_a_language_server_error_is_reported(editor: FakeEditor, root: Path) -> None:
    editor.lsp_errors["textDocument/documentSymbol"] = (-32603, "pyright crashed")
    result = await lsp(editor, "documentSymbol")
    assert result["isError"] is True
    assert "pyright crashed" in result["output"]
    uri = (root / "src" / "main.py").as_uri()
    assert editor.lsp_asks[0]["params"] == {"textDocument": {"uri": uri}}


async def test_workspace_symbol_asks_with_an_empty_query(editor: FakeEditor) -> None:
    editor.lsp_answers["workspace/symbol"] = [{"name": "helper", "kind": 12, "location": LOCATION}]
    result = await lsp(editor, "workspaceSymbol")
    assert editor.lsp_asks == [{"method": "workspace/symbol", "params": {"query": ""}}]
    assert '"name": "helper"' in result["output"]


async def test_incoming_calls_prepare_the_hierarchy_first(editor: FakeEditor) -> None:
    item = {"name": "helper", "kind": 12, "uri": LOCATION["uri"], "range": LOCATION["range"]}
    item["selectionRange"] = LOCATION["range"]
    editor.lsp_answers["textDocument/prepareCallHierarchy"] = [item, {**item, "name": "other"}]
    calls = [{"from": item, "fromRanges": [LOCATION["range"]]}]
    editor.lsp_answers["callHierarchy/incomingCalls"] = calls

    result = await lsp(editor, "incomingCalls")

    assert [ask["method"] for ask in editor.lsp_asks] == [
        "textDocument/prepareCallHierarchy",
        "callHierarchy/incomingCalls",
    ]
    assert editor.lsp_asks[1]["params"] == {"item": item}
    assert result["metadata"]["result"] == calls


async def test_outgoing_calls_without_a_hierarchy_item(editor: FakeEditor) -> None:
    result = await lsp(editor, "outgoingCalls")
    assert [ask["method"] for ask in editor.lsp_asks] == ["textDocument/prepareCallHierarchy"]
    assert result["output"] == "No results found for outgoingCalls"


async def test_a_missing_file(editor: FakeEditor, root: Path) -> None:
    result = await lsp(editor, "hover", filePath="src/nope.py")
    assert result["isError"] is True
    assert result["metadata"]["error"] == "not_found"
    assert result["output"] == f"File not found: {root / 'src' / 'nope.py'}"
    assert editor.lsp_asks == []


async def test_positions_are_1_based(editor: FakeEditor) -> None:
    result = await lsp(editor, "hover", line=0)
    assert result["isError"] is True
    assert result["metadata"]["error"] == "invalid_arguments"
    assert editor.lsp_asks == []
