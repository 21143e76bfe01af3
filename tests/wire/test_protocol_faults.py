"""Odd messages after initialize: answered or ignored, and the server keeps serving.

(Garbage before initialize, and framing faults: tests/wire/test_garbage.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.wire.conftest import Framed, make_project, raw_session


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


async def still_serves(client: Framed, msg_id: int) -> None:
    read = {"tool": "read", "args": {"filePath": "notes.txt"}}
    client.send(id=msg_id, method="tools/execute", params=read)
    assert "alpha" in (await client.answer_to(msg_id))["result"]["output"]


async def test_a_request_with_an_unusable_id_is_answered_without_one(
    root: Path, tmp_path: Path
) -> None:
    async with raw_session(root, tmp_path / "data") as (_, client):
        client.send(id=1.5, method="tools/list", params={})
        error = (await client.answer_to(None))["error"]
        assert error["code"] == -32600
        assert '"id" member must be a string or an integer' in error["message"]
        await still_serves(client, 2)


async def test_unknown_and_malformed_notifications_are_ignored(root: Path, tmp_path: Path) -> None:
    async with raw_session(root, tmp_path / "data") as (_, client):
        client.send(method="custom/somethingHappened", params={"what": 1})
        client.send(method="textDocument/didOpen", params={"textDocument": 5})
        logged = await client.request_from_server("window/logMessage")
        while "textDocument/didOpen" not in logged["params"]["message"]:
            logged = await client.request_from_server("window/logMessage")
        assert "ignored notification textDocument/didOpen" in logged["params"]["message"]
        await still_serves(client, 1)


async def test_a_malformed_answer_to_apply_edit_is_a_refusal(root: Path, tmp_path: Path) -> None:
    path = root / "notes.txt"
    options: dict[str, Any] = {"editor": {"applyEdit": True}}
    async with raw_session(root, tmp_path / "data", options=options) as (_, client):
        item = {"uri": path.as_uri(), "languageId": "text", "version": 1, "text": path.read_text()}
        client.send(method="textDocument/didOpen", params={"textDocument": item})
        await still_serves(client, 1)  # read: the edit may follow
        args = {"filePath": str(path), "oldString": "beta", "newString": "BETA"}
        client.send(id=2, method="tools/execute", params={"tool": "edit", "args": args})
        asked = await client.request_from_server("workspace/applyEdit")

        client.send(id=asked["id"], result="yes, done")  # not an ApplyWorkspaceEditResult

        result = (await client.answer_to(2))["result"]
        assert result["isError"] is True
        assert "workspace/applyEdit" in result["output"]
        assert path.read_text() == "alpha\nbeta\ngamma\n"
        await still_serves(client, 3)
