"""The editor bridge when the editor misbehaves: failed saves, silent edits, odd answers,
a prompt that fails, and an editor that goes away while it is being asked.

Each test runs its own ``toolhost serve`` (a FakeEditor, tests/wire/fake_editor.py),
since an editor that misbehaves leaves the server's view of its buffers behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.wire.conftest import PROMPTING, raw_session, serve_to
from tests.wire.fake_editor import EditorError, FakeEditor, connect_editor

SECONDS = 20
EDITING = {"applyEdit": True}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def opened_and_read(editor: FakeEditor, path: Path, text: str | None = None) -> None:
    await editor.open(path, text)
    result = await editor.execute("read", {"filePath": str(path)})
    assert result["isError"] is False, result["output"]


async def edited(editor: FakeEditor, path: Path, old: str, new: str) -> dict[str, Any]:
    args = {"filePath": str(path), "oldString": old, "newString": new}
    result = await editor.execute("edit", args)
    assert result["isError"] is False, result["output"]
    return result


async def test_a_save_the_editor_fails_is_written_by_the_sidecar(root: Path) -> None:
    path = root / "a.py"
    path.write_text("one\n")
    async with connect_editor(root, EDITING) as editor:
        await opened_and_read(editor, path)
        editor.save_fails = True

        await edited(editor, path, "one", "two")

        assert len(editor.applied) == 1 and len(editor.save_asks) == 1
        assert editor.buffers[path.as_uri()].text == "two\n"
        assert path.read_text() == "two\n"


async def test_an_edit_the_editor_never_reports_back_is_still_saved(root: Path) -> None:
    path = root / "quiet.py"
    path.write_text("one\n")
    async with connect_editor(root, EDITING) as editor:
        await opened_and_read(editor, path)
        editor.announces = False  # applies the edit, sends no didChange

        await edited(editor, path, "one", "two")

        assert len(editor.save_asks) == 1
        assert path.read_text() == "two\n"


async def test_a_buffer_that_is_not_on_disk_yet_is_written_through_the_editor(
    root: Path,
) -> None:
    path = root / "draft.py"
    async with connect_editor(root, EDITING) as editor:
        await editor.open(path, "draft\n")  # a new buffer, never saved

        result = await editor.execute("write", {"filePath": str(path), "content": "final\n"})

        assert result["isError"] is False, result["output"]
        assert len(editor.applied) == 1
        assert editor.buffers[path.as_uri()].text == "final\n"
        assert path.read_text() == "final\n"


@pytest.mark.parametrize(
    "answer",
    [
        {"unexpected": True},
        {"items": "not a list"},
        {"items": ["junk", {"uri": 7}, {"diagnostics": [{"message": "no uri"}]}]},
    ],
    ids=["no-items", "items-not-a-list", "items-without-uris"],
)
async def test_a_diagnostics_answer_without_usable_items_reports_nothing(
    root: Path, answer: dict[str, Any]
) -> None:
    path = root / "b.py"
    path.write_text("fine\n")
    async with connect_editor(root, {**EDITING, "diagnostics": True}) as editor:
        await opened_and_read(editor, path)
        editor.diagnostics_answer = answer

        result = await edited(editor, path, "fine", "ERR(broken)")

        assert result["output"] == "Edit applied successfully."
        assert result["metadata"]["diagnostics"] == {}
        assert len(editor.diagnostic_asks) == 2  # the baseline and after the edit
        assert path.read_text() == "ERR(broken)\n"


class FailingPrompt(FakeEditor):
    """A client that can show a window/showMessageRequest, but answers it with an error."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        del self.protocol.fm.features[types.WINDOW_SHOW_MESSAGE_REQUEST]

        @self.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def prompt(ls: FailingPrompt, params: types.ShowMessageRequestParams) -> None:
            ls.prompts.append(params)
            raise EditorError(code=-32603, message="no window to show it in")


async def test_a_prompt_that_fails_is_a_rejection(root: Path) -> None:
    options = {"config": {"permission": {"edit": "ask"}}}
    async with serve_to(
        FailingPrompt(root), root, options=options, capabilities=PROMPTING
    ) as editor:
        args = {"filePath": "new.txt", "content": "x"}
        result = await editor.execute("write", args)

        assert len(editor.prompts) == 1
        assert result["isError"] is True
        assert result["metadata"]["error"] == "permission_rejected"
        assert not (root / "new.txt").exists()


async def test_an_editor_that_goes_away_during_an_lsp_request(root: Path, tmp_path: Path) -> None:
    (root / "main.py").write_text("print(1)\n")
    options = {"editor": {"lsp": True}}
    async with raw_session(root, tmp_path / "data", options=options) as (proc, client):
        args = {"operation": "hover", "filePath": "main.py", "line": 1, "character": 1}
        client.send(id=2, method="tools/execute", params={"tool": "lsp", "args": args})
        await client.request_from_server("editor/lsp")

        client.close()  # the editor quits without answering

        result = (await client.answer_to(2))["result"]
        assert result["isError"] is True
        assert result["output"].startswith("The editor could not be asked (")
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0


def is_answer_to(msg_id: Any, message: dict[str, Any]) -> bool:
    return message.get("id") == msg_id and "method" not in message


async def cancelled_while_asking(
    root: Path,
    tmp_path: Path,
    options: dict[str, Any],
    method: str,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An edit of an open ``a.py`` cancelled while the server waits for the editor to
    answer ``method``: the call's answer, after checking the server withdrew its request."""
    path = root / "a.py"
    path.write_text("one\n")
    session = raw_session(root, tmp_path / "data", options=options, capabilities=capabilities)
    async with session as (proc, client):
        item = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": "one\n"}
        client.send(method="textDocument/didOpen", params={"textDocument": item})
        read = {"tool": "read", "args": {"filePath": str(path)}}
        client.send(id=1, method="tools/execute", params=read)
        assert (await client.answer_to(1))["result"]["isError"] is False
        args = {"filePath": str(path), "oldString": "one", "newString": "two"}
        client.send(id=2, method="tools/execute", params={"tool": "edit", "args": args})
        asked = await client.request_from_server(method)  # and never answered

        client.send(method="$/cancelRequest", params={"id": 2})

        seen: list[dict[str, Any]] = []
        withdrawal = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": asked["id"]}}
        while not (withdrawal in seen and any(is_answer_to(2, m) for m in seen)):
            seen.append(await client.next_message())
        (answer,) = [m for m in seen if is_answer_to(2, m)]
        client.send(id=3, method="shutdown")
        await client.answer_to(3)
        client.send(method="exit")
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0
        return answer


async def test_cancelled_while_the_editor_reports_diagnostics(root: Path, tmp_path: Path) -> None:
    options = {"editor": {"applyEdit": True, "diagnostics": True}}
    answer = await cancelled_while_asking(root, tmp_path, options, "editor/diagnostics")
    assert answer["error"]["code"] == -32800
    assert (root / "a.py").read_text() == "one\n"  # the baseline comes before the write


async def test_cancelled_while_the_editor_applies_the_edit(root: Path, tmp_path: Path) -> None:
    options = {"editor": EDITING}
    answer = await cancelled_while_asking(root, tmp_path, options, "workspace/applyEdit")
    assert answer["error"]["code"] == -32800
    assert (root / "a.py").read_text() == "one\n"


async def test_cancelled_while_the_person_is_prompted(root: Path, tmp_path: Path) -> None:
    # No permission/ask: the ask is a window/showMessageRequest.
    options = {"config": {"permission": {"edit": "ask"}}}
    prompting = {"window": {"showMessage": {}}}
    method = "window/showMessageRequest"
    answer = await cancelled_while_asking(root, tmp_path, options, method, prompting)
    assert answer["error"]["code"] == -32800
    assert (root / "a.py").read_text() == "one\n"


@pytest.mark.parametrize(
    ("encoding", "line_end"),
    [("utf-8", 10), ("utf-16", 7), ("utf-32", 6)],  # "é😀 one" in each encoding's units
)
async def test_edits_are_measured_in_the_negotiated_position_encoding(
    root: Path, encoding: str, line_end: int
) -> None:
    path = root / "wide.txt"
    path.write_text("é😀 one")  # no newline: the edit ends inside the line
    capabilities = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind(encoding)]
        )
    )
    async with serve_to(
        FakeEditor(root), root, options={"editor": EDITING}, capabilities=capabilities
    ) as editor:
        editor.position_encoding = encoding  # type: ignore[assignment]
        await opened_and_read(editor, path)

        await edited(editor, path, "one", "two")

        (change,) = editor.applied[0]["edit"]["documentChanges"]
        (sent,) = change["edits"]
        assert sent["range"]["end"] == {"line": 0, "character": line_end}
        assert path.read_text() == "é😀 two"
