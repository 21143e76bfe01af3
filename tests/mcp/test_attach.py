"""``toolhost mcp`` attached to an editor's sidecar.

A test editor (``FakeEditor``: buffers, applyEdit, saves, permission/ask) spawns
``toolhost serve`` over stdio; ``toolhost mcp`` started in the same folder finds it
through the lock file, and the official MCP SDK client talks to ``toolhost mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from server.attach.rpc import frame
from server.lockfile import LockInfo, discover
from tests.mcp.helpers import TOOLHOST, mcp_client, text_of
from tests.wire.conftest import serve_to
from tests.wire.fake_editor import FakeEditor

EDITOR_FLAGS = {"permissionAsk": True, "applyEdit": True, "diagnostics": True}
ASK_EDITS = {"permission": {"edit": "ask"}}


class ReviewingEditor(FakeEditor):
    """A FakeEditor whose review answers ``reply`` (and records what it was asked)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reply: dict[str, Any] = {"reply": "once"}
        del self.protocol.fm.features["permission/ask"]

        @self.feature("permission/ask")
        def permission_ask(ls: ReviewingEditor, params: dict[str, Any]) -> dict[str, Any]:
            ls.asks.append(params)
            return ls.reply


async def sidecar_lock(root: Path) -> LockInfo:
    """The lock file of the sidecar serving ``root`` (it is written after initialized).

    Usually there within a second; the generous deadline is for a loaded 2-core machine.
    """
    real = os.path.realpath(root)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for lock in discover():
            if real in lock.workspace_folders and lock.socket:
                return lock
        await asyncio.sleep(0.05)
    raise AssertionError(f"no sidecar lock file for {root} within 30 s")


def editor_session(root: Path) -> Any:
    return serve_to(
        ReviewingEditor(root), root, options={"editor": EDITOR_FLAGS, "config": ASK_EDITS}
    )


# "1": the sidecar serves the client on the pipes toolhost mcp hands it; "0": forwarded.
HANDOVER = pytest.mark.parametrize("handover", ["1", "0"], ids=["handed-over", "forwarded"])


@HANDOVER
async def test_mcp_reads_the_unsaved_buffer_and_edits_through_the_editors_review(
    worktree: Path, handover: str
) -> None:
    source = worktree / "notes.txt"
    source.write_text("saved on disk\n")
    async with editor_session(worktree) as editor:
        lock = await sidecar_lock(worktree)
        assert lock.transport == "stdio"
        assert oct(os.stat(lock.socket).st_mode & 0o777) == "0o600"  # type: ignore[arg-type]
        assert lock.path is not None and oct(os.stat(lock.path).st_mode & 0o777) == "0o600"
        await editor.open(source, "typed in the editor, not saved\n")
        async with mcp_client(worktree, env={"TOOLHOST_MCP_HANDOVER": handover}) as client:
            read = await client.call_tool("read", {"filePath": str(source)})
            assert "1: typed in the editor, not saved" in text_of(read)
            assert read.meta is not None
            assert read.meta["toolhost/metadata"]["attachedTo"]["pid"] == lock.pid

            edit = await client.call_tool(
                "edit",
                {"filePath": str(source), "oldString": "not saved", "newString": "reviewed"},
            )
            assert not edit.is_error, text_of(edit)
            assert [ask["permission"] for ask in editor.asks] == ["edit"]
            ask = editor.asks[0]
            assert "+typed in the editor, reviewed" in ask["metadata"]["diff"]
            # The edit touches the line the user typed and has not saved: the review says
            # so, and a plain "once" (no `unsaved: "save"`) applies it in the editor only.
            assert ask["metadata"]["unsaved"] == [
                {"file": "notes.txt", "overlaps": True, "lines": [[1, 1]]}
            ]
            assert ask["title"].endswith("(overlaps your unsaved changes in notes.txt)")
            assert editor.applied, "the edit did not go through workspace/applyEdit"
            assert editor.text_of(source) == "typed in the editor, reviewed\n"
            # The user's unsaved work is theirs: nothing saved it, the disk is as it was.
            assert editor.save_asks == []
            assert source.read_text() == "saved on disk\n"
            assert "was applied in the editor only" in text_of(edit)

            editor.reply = {"reply": "reject", "message": "not this way"}
            rejected = await client.call_tool(
                "edit",
                {"filePath": str(source), "oldString": "reviewed", "newString": "changed"},
            )
            assert rejected.is_error
            assert "not this way" in text_of(rejected)
            assert editor.text_of(source) == "typed in the editor, reviewed\n"
            assert source.read_text() == "saved on disk\n"
            assert len(editor.asks) == 2


async def test_no_attach_serves_the_disk_alone(worktree: Path) -> None:
    source = worktree / "notes.txt"
    source.write_text("saved on disk\n")
    async with editor_session(worktree) as editor:
        await sidecar_lock(worktree)
        await editor.open(source, "unsaved\n")
        async with mcp_client(worktree, "--no-attach") as client:
            read = await client.call_tool("read", {"filePath": str(source)})
    assert "1: saved on disk" in text_of(read)


async def test_list_editors_shows_which_sidecar_a_folder_attaches_to(worktree: Path) -> None:
    inner = worktree / "src"
    inner.mkdir()
    async with editor_session(worktree):
        lock = await sidecar_lock(worktree)
        shown = subprocess.run(
            [str(TOOLHOST), "mcp", "--list-editors", "--json", "--cwd", str(inner)],
            capture_output=True,
            text=True,
            check=True,
        )
        listing = json.loads(shown.stdout)
        chosen = [editor for editor in listing["editors"] if editor["chosen"]]
        assert [editor["pid"] for editor in chosen] == [lock.pid]
        elsewhere = subprocess.run(
            [str(TOOLHOST), "mcp", "--list-editors", "--cwd", str(worktree.parent)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "would serve it alone" in elsewhere.stdout


@HANDOVER
async def test_when_the_editor_closes_mcp_serves_alone_and_says_the_list_changed(
    worktree: Path, handover: str
) -> None:
    source = worktree / "notes.txt"
    source.write_text("saved on disk\n")
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with contextlib.AsyncExitStack() as stack:
        session = editor_session(worktree)
        editor = await session.__aenter__()
        try:
            await sidecar_lock(worktree)
            await editor.open(source, "unsaved\n")
            client = await stack.enter_async_context(
                mcp_client(
                    worktree,
                    env={"TOOLHOST_MCP_HANDOVER": handover},
                    message_handler=on_message,
                )
            )
            read = await client.call_tool("read", {"filePath": "notes.txt"})
            assert "1: unsaved" in text_of(read)
        finally:
            await session.__aexit__(None, None, None)  # the editor quits
        await asyncio.wait_for(changed.wait(), 15)
        read = await client.call_tool("read", {"filePath": str(source)})
        assert "1: saved on disk" in text_of(read)
        assert "attachedTo" not in (read.meta or {}).get("toolhost/metadata", {})


async def raw_session(socket: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``messages`` at once on the socket; every answer until it closes, answers
    request 2, or stays quiet for 20 s (the refused cases close at once; the allowed one
    runs a sandboxed command, which a loaded machine may take seconds to start)."""
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(b"".join(frame(message) for message in messages))
    await writer.drain()
    answers: list[dict[str, Any]] = []
    buffer = b""
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), 20)
            if not chunk:
                break
            buffer += chunk
            while b"\r\n\r\n" in buffer:
                header, _, rest = buffer.partition(b"\r\n\r\n")
                length = int(header.split(b":")[1])
                if len(rest) < length:
                    break
                answers.append(json.loads(rest[:length]))
                buffer = rest[length:]
            if any(answer.get("id") == 2 for answer in answers):
                break
    except TimeoutError:
        pass
    finally:
        writer.close()
    return answers


def attack(token: str | None, marker: Path) -> list[dict[str, Any]]:
    options = {} if token is None else {"token": token}
    command = f"touch {marker}"
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"initializationOptions": options},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/execute",
            "params": {"tool": "bash", "args": {"command": command, "description": "Touch"}},
        },
    ]


async def test_the_socket_runs_nothing_without_the_lock_files_token(worktree: Path) -> None:
    async with editor_session(worktree):
        lock = await sidecar_lock(worktree)
        assert lock.socket is not None
        # With the token (the defence passed), the pipelined command runs...
        allowed = worktree / "with-token"
        answers = await raw_session(lock.socket, attack(lock.token, allowed))
        assert answers[0]["result"]["serverInfo"]["name"] == "toolhost"
        assert allowed.exists()
        # ...without it, or with a wrong one, the connection is closed before it runs.
        for token in (None, "0" * 32):
            marker = worktree / f"without-{token}"
            answers = await raw_session(lock.socket, attack(token, marker))
            assert answers[0]["error"]["code"] == -32600
            assert all(answer.get("id") != 2 for answer in answers)
            await asyncio.sleep(0.5)
            assert not marker.exists()
