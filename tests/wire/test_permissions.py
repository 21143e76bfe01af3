"""Permission asks over the wire: permission/ask, the showMessageRequest fallback,
config rules, and cancelling a call that waits on an ask."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.wire.conftest import PROMPTING, connect, make_project

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASKING = {"editor": {"permissionAsk": True}, "sessionID": "ses_ask"}
# The default config allows edits; these make every edit ask.
EDITS_ASK = {"permission": {"edit": "ask"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


async def test_permission_ask_shape_and_once(root: Path) -> None:
    async with connect(root, options={**ASKING, "config": EDITS_ASK}) as client:
        target = root / "asked.txt"
        result = await client.execute(
            "write",
            {"filePath": str(target), "content": "hello\n"},
            callID="call_1",
            messageID="msg_1",
        )
        assert result["isError"] is False, result["output"]
        assert target.read_text() == "hello\n"
        [ask] = client.asks
        assert ask["sessionID"] == "ses_ask"
        assert ask["callID"] == "call_1"
        assert ask["messageID"] == "msg_1"
        assert ask["tool"] == "write"
        assert ask["permission"] == "edit"
        assert ask["patterns"] == ["asked.txt"]
        assert isinstance(ask["title"], str) and "asked.txt" in ask["title"]
        assert "+hello" in ask["metadata"]["diff"]


async def test_reject_with_a_message_reaches_the_model(root: Path) -> None:
    async with connect(root, options={**ASKING, "config": EDITS_ASK}) as client:
        client.ask_reply = {"reply": "reject", "message": "use the other file"}
        target = root / "refused.txt"
        result = await client.execute("write", {"filePath": str(target), "content": "x"})
        assert result["isError"] is True
        assert result["metadata"]["error"] == "permission_rejected"
        assert "use the other file" in result["output"]
        assert not target.exists()


async def test_always_is_remembered(root: Path) -> None:
    async with connect(root, options={**ASKING, "config": EDITS_ASK}) as client:
        client.ask_reply = {"reply": "always"}  # the default option: this file
        for name in ("one.txt", "one.txt", "two.txt"):
            result = await client.execute("write", {"filePath": name, "content": "x"})
            assert result["isError"] is False, result["output"]
        assert [ask["patterns"] for ask in client.asks] == [["one.txt"], ["two.txt"]]
        assert client.asks[0]["alwaysOptions"][0] == {
            "id": "file",
            "patterns": ["one.txt"],
            "label": "this file (one.txt)",
        }


async def test_a_malformed_reply_counts_as_a_rejection(root: Path) -> None:
    async with connect(root, options={**ASKING, "config": EDITS_ASK}) as client:
        client.ask_reply = {"reply": "sure"}
        result = await client.execute("write", {"filePath": "x.txt", "content": "x"})
        assert result["metadata"]["error"] == "permission_rejected"
        assert not (root / "x.txt").exists()


async def test_config_deny_rule(root: Path) -> None:
    options = {**ASKING, "config": {"permission": {"edit": "deny"}}}
    async with connect(root, options=options) as client:
        result = await client.execute("write", {"filePath": "denied.txt", "content": "x"})
        assert result["isError"] is True
        assert result["metadata"]["error"] == "permission_denied"
        assert '"action": "deny"' in result["output"]
        assert client.asks == []  # a deny never asks
        assert not (root / "denied.txt").exists()


@pytest.mark.parametrize(("choice", "written"), [("Allow once", True), ("Reject", False)])
async def test_show_message_request_fallback(root: Path, choice: str, written: bool) -> None:
    async with connect(root, options={"config": EDITS_ASK}, capabilities=PROMPTING) as client:
        client.prompt_choice = choice
        result = await client.execute("write", {"filePath": "prompted.txt", "content": "x"})
        assert (root / "prompted.txt").exists() is written
        assert result["isError"] is not written
        if not written:
            assert result["metadata"]["error"] == "permission_rejected"
        [prompt] = client.prompts
        assert prompt.type == types.MessageType.Warning
        assert "prompted.txt" in prompt.message
        assert [a.title for a in prompt.actions or []] == [
            "Allow once",
            "Always allow: this file (prompted.txt)",
            "Reject",
        ]
        assert client.asks == []  # permission/ask is only for clients that said so


async def test_a_dismissed_prompt_is_a_rejection(root: Path) -> None:
    async with connect(root, options={"config": EDITS_ASK}, capabilities=PROMPTING) as client:
        client.prompt_choice = None
        result = await client.execute("write", {"filePath": "dismissed.txt", "content": "x"})
        assert result["metadata"]["error"] == "permission_rejected"


async def test_cancel_a_call_waiting_on_an_ask(root: Path) -> None:
    async with connect(root, options={**ASKING, "config": EDITS_ASK}) as client:
        client.ask_reply = None  # the ask is never answered
        target = root / "never.txt"
        pending = client.protocol.send_request(
            "tools/execute",
            {"tool": "write", "args": {"filePath": str(target), "content": "x"}},
            msg_id="cancel-me",
        )
        await asyncio.wait_for(client.asked.wait(), 10)
        client.cancel_request(types.CancelParams(id="cancel-me"))
        with pytest.raises(JsonRpcRequestCancelled) as raised:
            await asyncio.wait_for(asyncio.wrap_future(pending), 10)
        assert raised.value.code == -32800
        assert not target.exists()
        # The server goes on serving, and the next ask is a fresh one.
        client.ask_reply = {"reply": "once"}
        result = await client.execute("write", {"filePath": str(target), "content": "y"})
        assert result["isError"] is False, result["output"]
        assert target.read_text() == "y"


async def test_an_invalid_config_is_shown_once_and_fails_closed(root: Path) -> None:
    options = {**ASKING, "config": {"permission": {"edit": "allow", "bash": "perhaps"}}}
    async with connect(root, options=options) as client:
        result = await client.execute("write", {"filePath": "guarded.txt", "content": "x"})
        assert result["isError"] is False
        assert [ask["permission"] for ask in client.asks] == ["edit"]  # allow became ask
        [shown] = client.messages
        assert shown.type == types.MessageType.Error
        assert "permission.bash" in shown.message
        assert any("permission.bash" in m.message for m in client.log_messages)
