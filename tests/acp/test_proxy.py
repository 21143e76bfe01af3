"""``toolhost acp`` between a test ACP client and the scripted ACP agent.

The agent (``tests/acp/scripted_agent.py``) starts the ``toolhost mcp`` the proxy
injected, with the official MCP SDK, and calls toolhost's tools; it also sends the
client methods the proxy answers itself.  Real processes, real files, the real
sidecar: only the model is a script.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.client import PATCH, AcpClient, AcpFailure, allow, proxy, reject, stderr_of
from tests.acp.schema import validate_sent

AGENT = [sys.executable, "-m", "tests.acp.scripted_agent"]
ROOT = Path(__file__).resolve().parents[2]


def agent_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "SCRIPTED_AGENT_LOG": str(tmp_path / "agent.jsonl"),
    }


def agent_log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "agent.jsonl").read_text().splitlines()]


def step_results(client: AcpClient) -> list[Any]:
    chunks = client.updates("agent_message_chunk")
    return [json.loads(chunk["content"]["text"])["result"] for chunk in chunks]


async def run_steps(client: AcpClient, project: Path, steps: list[Any]) -> list[Any]:
    await client.initialize()
    session = await client.new_session(project)
    result = await client.prompt(session, json.dumps(steps))
    assert result["stopReason"] == "end_turn"
    return step_results(client)


async def test_a_two_file_patch_is_reviewed_as_one_permission_request_with_both_diffs(
    project: Path, tmp_path: Path
) -> None:
    steps = [{"mcp": "apply_patch", "args": {"patchText": PATCH}}]
    options = ("--model", "openai/gpt-5")
    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path, options=options) as client:
        results = await run_steps(client, project, steps)
    assert not results[0]["isError"], (results, stderr_of(tmp_path))
    assert (project / "a.py").read_text() == "x = 2\n"
    assert (project / "b.py").read_text() == "y = 1\n"
    [asked] = client.permission_requests
    diffs = {item["path"]: item for item in asked["toolCall"]["content"]}
    assert diffs[str(project / "a.py")]["oldText"] == "x = 1\n"
    assert diffs[str(project / "a.py")]["newText"] == "x = 2\n"
    assert diffs[str(project / "b.py")]["oldText"] is None
    assert diffs[str(project / "b.py")]["newText"] == "y = 1\n"
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
    # The agent was given toolhost by absolute path, beside the client's own servers.
    [new] = [m for m in agent_log(tmp_path) if m.get("method") == "session/new"]
    [entry] = new["params"]["mcpServers"]
    assert Path(entry["command"]).is_absolute() and entry["args"][0] == "mcp"
    init = next(m for m in agent_log(tmp_path) if m.get("method") == "initialize")
    capabilities = init["params"]["clientCapabilities"]
    assert capabilities["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert capabilities["terminal"] is True


async def test_a_rejection_leaves_the_disk_untouched_and_the_model_is_told(
    project: Path, tmp_path: Path
) -> None:
    edit = {"filePath": str(project / "a.py"), "oldString": "1", "newString": "3"}
    steps = [{"mcp": "edit", "args": edit}]
    steps.insert(0, {"mcp": "read", "args": {"filePath": str(project / "a.py")}})
    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path, choose=reject) as client:
        results = await run_steps(client, project, steps)
    assert (project / "a.py").read_text() == "x = 1\n"
    assert results[1]["isError"], results
    assert "rejected" in results[1]["text"], results
    assert len(client.permission_requests) == 1


async def test_fs_write_text_file_from_the_agent_goes_through_review(
    project: Path, tmp_path: Path
) -> None:
    target = project / "a.py"
    write = {"request": "fs/write_text_file", "params": {"path": str(target), "content": "x = 9\n"}}
    read = {"request": "fs/read_text_file", "params": {"path": str(target)}}
    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path, choose=reject) as client:
        results = await run_steps(client, project, [write, read])
    assert "error" in results[0] and "rejected" in results[0]["error"]["message"], results
    assert target.read_text() == "x = 1\n"
    assert results[1] == {"content": "x = 1\n"}
    [asked] = client.permission_requests
    [diff] = asked["toolCall"]["content"]
    assert diff == {"type": "diff", "path": str(target), "oldText": "x = 1\n", "newText": "x = 9\n"}

    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path, choose=allow) as client:
        results = await run_steps(client, project, [write])
    assert results[0] == {}, results
    assert target.read_text() == "x = 9\n"


@pytest.fixture(autouse=True)
def every_message_sent_is_valid_acp(tmp_path: Path) -> Any:
    """After each test: everything the proxy sent validates against the ACP v1 schema."""
    yield
    log = tmp_path / "acp-sent.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    if records:
        validate_sent(records)


async def test_a_terminal_runs_toolhost_bash_with_the_output_limit(
    project: Path, tmp_path: Path
) -> None:
    terminal = {"terminal": {"command": "printf", "args": ["abcdefghij"], "outputByteLimit": 4}}
    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path) as client:
        results = await run_steps(client, project, [terminal])
    [ran] = results
    assert ran["exit"] == {"exitCode": 0, "signal": None}, ran
    assert ran["output"]["output"] == "ghij" and ran["output"]["truncated"] is True, ran
    [asked] = client.permission_requests  # review by default: the command asked first
    assert asked["toolCall"]["kind"] == "execute"
    assert "printf abcdefghij" in asked["toolCall"]["content"][0]["content"]["text"]


async def test_an_agent_that_exits_mid_prompt_fails_the_prompt_with_its_status(
    project: Path, tmp_path: Path
) -> None:
    async with proxy(AGENT, project, agent_env(tmp_path), tmp_path) as client:
        await client.initialize()
        session = await client.new_session(project)
        with pytest.raises(AcpFailure, match="exited with status 3"):
            await client.prompt(session, json.dumps([{"exit": 3}]), timeout=60)
        await asyncio.wait_for(client.process.wait(), 30)  # and the proxy ends


async def test_an_agent_that_never_answers_initialize_gets_a_clear_error(
    project: Path, tmp_path: Path
) -> None:
    env = {**agent_env(tmp_path), "SCRIPTED_AGENT_HANG_AT_START": "1"}
    options = ("--start-timeout", "2")
    async with proxy(AGENT, project, env, tmp_path, options=options) as client:
        with pytest.raises(AcpFailure, match="did not answer initialize within 2 s"):
            await client.initialize()


async def recording_editor(project: Path, *, review: bool) -> tuple[Any, list[dict[str, Any]]]:
    """An editor's toolhost on ``project`` (a real ``toolhost serve`` whose editor is the
    test), started, and the reviews it is asked (each answered ``once``)."""
    from server.acp.upstream import OwnSidecar

    asked: list[dict[str, Any]] = []

    async def editor_review(ask: dict[str, Any]) -> dict[str, Any]:
        asked.append(ask)
        return {"reply": "once"}

    editor = OwnSidecar(project, editor_review, review=review)
    await editor.start()
    return editor, asked


async def test_attached_the_editor_reviews_and_the_client_sees_the_landed_diffs(
    project: Path, tmp_path: Path
) -> None:
    """An editor's toolhost has the folder open (a real ``toolhost serve`` whose editor is
    this test): the review goes to the editor, not the ACP client, which is shown the
    change once it landed."""
    editor, asked = await recording_editor(project, review=True)
    try:
        env = {**agent_env(tmp_path), "XDG_RUNTIME_DIR": str(editor.runtime)}
        steps = [{"mcp": "apply_patch", "args": {"patchText": PATCH}}]
        options = ("--model", "openai/gpt-5")
        async with proxy(AGENT, project, env, tmp_path, options=options) as client:
            results = await run_steps(client, project, steps)
    finally:
        await editor.close()
    assert not results[0]["isError"], results
    assert client.permission_requests == []  # the editor reviewed it
    assert len(asked) == 1 and asked[0]["permission"] == "edit"
    assert (project / "a.py").read_text() == "x = 2\n"
    [landed] = client.updates("tool_call")
    diffs = {item["path"]: item for item in landed["content"]}
    assert diffs[str(project / "a.py")] == {
        "type": "diff",
        "path": str(project / "a.py"),
        "oldText": "x = 1\n",
        "newText": "x = 2\n",
    }
    assert diffs[str(project / "b.py")]["oldText"] is None
    assert landed["status"] == "completed"


async def test_attached_fs_read_text_file_sees_the_editors_unsaved_buffer(
    project: Path, tmp_path: Path
) -> None:
    from server.acp.upstream import OwnSidecar

    async def never(ask: dict[str, Any]) -> dict[str, Any]:
        return {"reply": "reject"}

    editor = OwnSidecar(project, never, review=True)
    await editor.start()
    target = project / "a.py"
    editor.peer.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": target.as_uri(),
                "languageId": "python",
                "version": 1,
                "text": "x = 'unsaved'\n",
            }
        },
    )
    try:
        env = {**agent_env(tmp_path), "XDG_RUNTIME_DIR": str(editor.runtime)}
        read = {"request": "fs/read_text_file", "params": {"path": str(target)}}
        async with proxy(AGENT, project, env, tmp_path) as client:
            results = await run_steps(client, project, [read])
    finally:
        await editor.close()
    assert results == [{"content": "x = 'unsaved'\n"}]
    assert target.read_text() == "x = 1\n"


async def test_a_killed_proxy_takes_its_agent_with_it(project: Path, tmp_path: Path) -> None:
    """A client that kills ``toolhost acp`` (SIGKILL: no shutdown runs) must not leave the
    agent running for good, even one that does not end when its stdin closes (codex-acp
    and its MCP servers stayed). This agent hangs before it reads anything."""
    env = {**agent_env(tmp_path), "SCRIPTED_AGENT_HANG_AT_START": "1"}
    async with proxy(AGENT, project, env, tmp_path, options=("--start-timeout", "60")) as client:
        children = Path(f"/proc/{client.process.pid}/task/{client.process.pid}/children")
        for _ in range(100):
            if children.read_text().split():
                break
            await asyncio.sleep(0.05)
        agent = int(children.read_text().split()[0])
        client.process.kill()
        for _ in range(100):
            state = Path(f"/proc/{agent}/stat")
            if not state.exists() or state.read_text().split(") ")[1].startswith("Z"):
                break
            await asyncio.sleep(0.05)
        else:
            os.kill(agent, 9)
            pytest.fail(f"the agent (pid {agent}) outlived its killed proxy")
