"""The lean door answers as the SDK's door does (``server/mcp/lean.py``).

``toolhost mcp`` serves handshake-era clients without the MCP SDK, and hands only the
2026-07-28 revision to the SDK. Here one scripted session (handshake, listing, calls that
succeed and fail, progress, an elicitation, a cancel, requests before ``initialize`` and
methods it does not serve) runs against both doors (``TOOLHOST_MCP_ENGINE=sdk`` forces the
SDK's), and every message each sends must be the same. The session opens with
``initialize``, so the lean door serves it (``test_the_session_is_the_lean_doors``).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import TOOLHOST

pytestmark = pytest.mark.asyncio

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "script", "version": "1"},
}


def request(request_id: int | str, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(request_id: int, name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": arguments, **extra})


SCRIPT: list[Any] = [
    request(0, "initialize", {"protocolVersion": "2025-06-18"}),  # no capabilities: refused
    request(1, "tools/list"),  # not initialized: refused
    request(2, "ping"),  # answered all the same
    request(3, "initialize", INIT),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    request(4, "tools/list"),
    call(5, "read", {"filePath": "a.txt"}),
    call(6, "read", {"filePath": "missing.txt"}),
    call(7, "no_such_tool", {}),
    request(8, "resources/list"),
    request(9, "tools/call", {"arguments": {}}),  # no name
    call(
        10,
        "bash",
        {"command": "echo one; echo two", "description": "count"},
        _meta={"progressToken": "p"},
    ),
    "wait",
    call(11, "bash", {"command": "sleep 30", "description": "long"}),
    "wait",
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 11}},
    request(12, "ping"),
]


async def session(root: Path, engine: str | None) -> list[dict[str, Any]]:
    env = {**os.environ, "TOOLHOST_DATA_DIR": str(root.parent / f"data-{engine}")}
    if engine:
        env["TOOLHOST_MCP_ENGINE"] = engine
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST), "mcp", "--no-attach", cwd=root, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[dict[str, Any]] = []
    answered: dict[Any, asyncio.Event] = {}

    async def read() -> None:
        assert proc.stdout is not None and proc.stdin is not None
        while line := await proc.stdout.readline():
            message = json.loads(line)
            seen.append(message)
            if message.get("method") == "elicitation/create":  # allow once
                reply = {"action": "accept", "content": {"decision": "once"}}
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": reply}
                proc.stdin.write(json.dumps(answer).encode() + b"\n")
            if "id" in message and "method" not in message:
                answered.setdefault(message["id"], asyncio.Event()).set()

    reader = asyncio.create_task(read())
    last = None
    for step in SCRIPT:
        if step == "wait":  # until the call before has been answered or has started
            if last in (10,):
                await asyncio.wait_for(answered.setdefault(last, asyncio.Event()).wait(), 30)
            else:
                await asyncio.sleep(1.0)
            continue
        proc.stdin.write(json.dumps(step).encode() + b"\n")
        await proc.stdin.drain()
        last = step.get("id")
        if last in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12):
            await asyncio.wait_for(answered.setdefault(last, asyncio.Event()).wait(), 30)
    proc.stdin.close()
    await asyncio.wait_for(proc.wait(), 30)
    await reader
    return seen


def comparable(messages: list[dict[str, Any]], root: Path) -> list[Any]:
    """The messages, the root folder's path left out, and without the heartbeats (a progress
    notification that repeats the one before: how many a call gets depends on how long it
    took on this machine), the others numbered again."""
    text = json.dumps(messages, sort_keys=True).replace(str(root), "<root>")
    kept, last, count = [], None, 0
    for message in json.loads(text):
        if message.get("method") == "notifications/progress":
            said = message["params"]["message"]
            if said == last:
                continue
            last, count = said, count + 1
            message["params"]["progress"] = count
        kept.append(message)
    return kept


async def test_both_doors_send_the_same_messages(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "opencode.json").write_text(json.dumps({"permission": {"bash": "ask"}}))
    lean = comparable(await session(root, None), root)
    sdk = comparable(await session(root, "sdk"), root)
    assert lean == sdk
    by_id = {m["id"]: m for m in lean if "id" in m and "method" not in m}
    assert by_id[0]["error"]["code"] == -32602 and by_id[1]["error"]["code"] == -32602
    assert by_id[2]["result"] == {}
    assert by_id[3]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[8]["error"]["code"] == -32601 and by_id[9]["error"]["code"] == -32602
    assert 11 not in by_id  # the cancelled call is not answered
    progress = [m["params"] for m in lean if m.get("method") == "notifications/progress"]
    assert progress and all(p["progressToken"] == "p" for p in progress)
    assert [m["method"] for m in lean if m.get("method") == "elicitation/create"]


async def test_a_line_that_is_not_json_is_answered_with_a_parse_error(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST), "mcp", "--no-attach", cwd=tmp_path,
        env={**os.environ, "TOOLHOST_DATA_DIR": str(tmp_path / "data")},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request(1, "initialize", INIT)).encode() + b"\nnot json\n")
    await proc.stdin.drain()
    first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    second = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
    proc.stdin.close()
    await asyncio.wait_for(proc.wait(), 30)
    assert first["id"] == 1 and "result" in first
    assert second == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }


async def test_the_session_is_the_lean_doors() -> None:
    from server.mcp.lean import opens_a_handshake

    assert opens_a_handshake(SCRIPT[0])
    assert not opens_a_handshake(request(1, "server/discover"))


async def test_a_handshake_sent_while_the_sdk_loads_is_served(tmp_path: Path) -> None:
    # Claude Code opens with the 2026-07-28 revision's server/discover and, when no answer
    # comes within about 2.5 s (the SDK's door loads for a second, more on a loaded
    # machine), falls back to initialize. The SDK's door would refuse that handshake.
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST), "mcp", "--no-attach", cwd=tmp_path,
        env={**os.environ, "TOOLHOST_DATA_DIR": str(tmp_path / "data")},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    discover = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    lines = [request("probe", "server/discover", discover), request(1, "initialize", INIT)]
    proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    await proc.stdin.drain()
    answers = {}
    while len(answers) < 2:
        message = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
        answers[message["id"]] = message
    proc.stdin.write(json.dumps(request(2, "tools/list")).encode() + b"\n")
    await proc.stdin.drain()
    listed = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
    proc.stdin.close()
    await asyncio.wait_for(proc.wait(), 30)
    assert answers["probe"]["error"]["code"] == -32601  # as a handshake-era server answers
    assert answers[1]["result"]["protocolVersion"] == "2025-06-18"
    assert "bash" in {tool["name"] for tool in listed["result"]["tools"]}
