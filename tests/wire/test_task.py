"""``task`` with the sidecar's own runner, over the wire, against a scripted model.

The sidecar (``toolhost serve``) is configured with a provider whose ``baseURL`` is a
scripted OpenAI-compatible server on 127.0.0.1 (``tests/openai_server.py``); the
"model" asks for tool calls, the sidecar runs them in the child session and sends
their output back, and the parent gets OpenCode 1.18.33's envelope.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.openai_server import Call, ScriptedModel, Turn
from tests.wire.conftest import WireClient, connect, make_project

module_loop = pytest.mark.asyncio(loop_scope="module")
SECONDS = 20

AGENTS = {
    "review": {"mode": "subagent", "description": "Reviews a change for bugs"},
    "nobash": {"mode": "subagent", "description": "No commands", "permission": {"bash": "deny"}},
    "writer": {"mode": "subagent", "description": "Writes files", "permission": {"edit": "allow"}},
    "nester": {"mode": "subagent", "description": "Starts tasks", "permission": {"task": "allow"}},
    "lead": {"mode": "primary", "description": "Not a sub-agent"},
    "secret": {"mode": "subagent", "description": "Hidden from build by permission.task"},
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("task")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        yield base


@pytest.fixture(scope="module")
def root(base: Path) -> Path:
    return make_project(base)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel() as server:
        yield server


def config(model: ScriptedModel, **extra: Any) -> dict[str, Any]:
    return {
        "provider": {"local": model.provider("coder")},
        "model": "local/coder",
        "agent": AGENTS,
        "permission": {"task": {"secret": "deny"}, "bash": "ask"},
        **extra,
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path, model: ScriptedModel) -> AsyncIterator[WireClient]:
    options = {"editor": {"permissionAsk": True}, "sessionID": "ses_top", "config": config(model)}
    async with connect(root, options=options) as client:
        yield client


@pytest.fixture
def fresh(client: WireClient, model: ScriptedModel) -> WireClient:
    client.asks.clear()
    client.updates.clear()
    client.ask_reply = {"reply": "once"}
    model.requests.clear()
    model.hung_up.clear()
    model.holding.clear()
    return client


def task(prompt: str, agent: str = "general", **extra: Any) -> dict[str, Any]:
    return {"description": "Look around", "prompt": prompt, "subagent_type": agent, **extra}


def task_id(output: str) -> str:
    found = re.match(r'<task id="([^"]+)" state="completed">', output)
    assert found, output
    return found.group(1)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@module_loop
async def test_listed_with_opencodes_description(fresh: WireClient) -> None:
    tools = {t["id"]: t for t in (await fresh.call("tools/list", {}))["tools"]}
    described = tools["task"]["description"]
    assert described.startswith("Launch a new agent to handle complex, multistep tasks")
    listing = described.split("Available agent types and the tools they have access to:\n")[1]
    names = [line.split(":")[0][2:] for line in listing.splitlines()]
    # not primary (build, plan, lead), not denied by permission.task (secret), sorted
    assert names == ["explore", "general", "nester", "nobash", "review", "writer"]
    assert "- review: Reviews a change for bugs" in listing
    assert listing.startswith("- explore: Fast agent specialized for exploring codebases.")
    parameters = tools["task"]["parameters"]
    assert parameters["required"] == ["description", "prompt", "subagent_type"]
    assert set(parameters["properties"]) == {
        "description",
        "prompt",
        "subagent_type",
        "task_id",
        "command",
    }


@module_loop
async def test_a_child_reads_then_greps_and_the_parent_gets_the_last_text(
    fresh: WireClient, model: ScriptedModel, root: Path
) -> None:
    model.script = [
        Turn(text="Let me look.", calls=[Call("read", {"filePath": "notes.txt"})]),
        Turn(calls=[Call("grep", {"pattern": "TODO"})]),
        Turn(text="notes.txt lists alpha, beta, gamma; the TODO is in src/pkg/util.py."),
    ]
    result = await fresh.execute(
        "task", task("Summarise notes.txt and find TODOs"), callID="call_task"
    )
    assert result["isError"] is False, result["output"]
    child = task_id(result["output"])
    assert result["output"] == (
        f'<task id="{child}" state="completed">\n<task_result>\n'
        "notes.txt lists alpha, beta, gamma; the TODO is in src/pkg/util.py.\n"
        "</task_result>\n</task>"
    )
    assert result["title"] == "Look around"
    assert result["metadata"]["sessionId"] == child
    assert result["metadata"]["parentSessionId"] == "ses_top"
    assert result["metadata"]["model"] == {"providerID": "local", "modelID": "coder"}
    assert [(c["tool"], c["status"]) for c in result["metadata"]["calls"]] == [
        ("read", "completed"),
        ("grep", "completed"),
    ]

    first, second, third = model.requests
    assert first["model"] == "coder" and first["stream"] is True
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][-1] == {
        "role": "user",
        "content": "Summarise notes.txt and find TODOs",
    }
    offered = [t["function"]["name"] for t in first["tools"]]
    assert "read" in offered and "grep" in offered
    assert "task" not in offered and "todowrite" not in offered  # denied to children
    # The second request really carried the read's output, the third the grep's.
    assert "alpha" in tool_messages(second)[0] and "gamma" in tool_messages(second)[0]
    assert "util.py" in tool_messages(third)[1]
    assert model.headers[0]["authorization"] == "Bearer test-key"

    # Progress: tools/update of the parent call, naming the child and each of its calls.
    mine = [u for u in fresh.updates if u.get("callID") == "call_task"]
    assert mine and all(u["metadata"]["sessionId"] == child for u in mine)
    assert mine[0]["title"] == "Look around"
    seen = {c["tool"] for u in mine for c in u["metadata"].get("calls", [])}
    assert seen == {"read", "grep"}


@module_loop
async def test_task_id_resumes_the_child(fresh: WireClient, model: ScriptedModel) -> None:
    model.script = [Turn(text="The first answer is 42.")]
    first = await fresh.execute("task", task("What does core.py return?"))
    child = task_id(first["output"])
    model.script = [Turn(text="Doubled, that is 84.")]
    second = await fresh.execute("task", task("And doubled?", task_id=child))
    assert task_id(second["output"]) == child
    resumed = model.requests[-1]["messages"]
    contents = [m["content"] for m in resumed]
    assert contents[1:] == [
        "What does core.py return?",
        "The first answer is 42.",
        "And doubled?",
    ]
    # An unknown task_id starts a fresh child, as in OpenCode.
    model.script = [Turn(text="fresh")]
    third = await fresh.execute("task", task("Hello", task_id="ses_nonexistent"))
    assert task_id(third["output"]) not in (child, "ses_nonexistent")


@module_loop
async def test_a_sub_agent_that_denies_bash_cannot_run_it_even_after_an_always(
    fresh: WireClient, model: ScriptedModel, root: Path
) -> None:
    marker = root / "bash-ran.txt"
    # The parent's bash asks; the person answers "always" for touch.
    fresh.ask_reply = {"reply": "always"}
    parent = await fresh.execute(
        "bash", {"command": "touch parent-ran.txt", "description": "Creates a file"}
    )
    assert parent["isError"] is False, parent["output"]
    # Defence off: a sub-agent that does not deny bash runs it (the parent's "always"
    # covers it on the parent's side; the child's own side asks, and is answered once).
    fresh.ask_reply = {"reply": "once"}
    command = {"command": f"touch {marker.name}", "description": "Creates a file"}
    model.script = [Turn(calls=[Call("bash", command)]), Turn(text="done")]
    allowed = await fresh.execute("task", task("Make the marker", "general"))
    assert allowed["isError"] is False, allowed["output"]
    assert marker.exists()
    marker.unlink()
    # The sub-agent denies bash: the parent's "always" does not lift it.
    asks_before = len(fresh.asks)
    model.script = [Turn(calls=[Call("bash", command)]), Turn(text="should not get here")]
    denied = await fresh.execute("task", task("Make the marker", "nobash"))
    assert denied["isError"] is True
    child = denied["metadata"]["sessionId"]
    assert denied["output"].startswith(f"Subagent failed (task_id: {child}): ")
    assert "not available to the nobash sub-agent" in denied["output"]
    assert not marker.exists()
    assert len(fresh.asks) == asks_before  # nobody was asked
    assert "bash" not in [t["function"]["name"] for t in model.requests[-1]["tools"]]
    assert len(model.requests) == 3  # the loop stopped at the deny, as OpenCode's does


@module_loop
async def test_a_parent_deny_holds_in_the_child(
    fresh: WireClient, model: ScriptedModel, root: Path
) -> None:
    """plan denies edits; the writer sub-agent allows them; a child of plan cannot edit."""
    target = root / "child-wrote.txt"
    write = {"filePath": "child-wrote.txt", "content": "from the child\n"}
    model.script = [Turn(calls=[Call("write", write)]), Turn(text="wrote it")]
    fine = await fresh.execute("task", task("Write the file", "writer"), agent="build")
    assert fine["isError"] is False, fine["output"]
    assert target.read_text() == "from the child\n"
    target.unlink()
    model.script = [Turn(calls=[Call("write", write)]), Turn(text="wrote it")]
    refused = await fresh.execute("task", task("Write the file", "writer"), agent="plan")
    assert refused["isError"] is True
    assert "Subagent failed" in refused["output"]
    assert not target.exists()


@module_loop
async def test_cancel_stops_the_child_and_its_command(
    fresh: WireClient, model: ScriptedModel, root: Path
) -> None:
    started, finished = root / "started.txt", root / "finished.txt"
    command = {
        "command": f"touch {started.name}; sleep 30.5; touch {finished.name}",
        "description": "Waits a long time",
    }
    fresh.ask_reply = {"reply": "once"}
    model.script = [Turn(calls=[Call("bash", command)]), Turn(text="never")]
    pending = fresh.protocol.send_request(
        "tools/execute", {"tool": "task", "args": task("Wait", "general")}, msg_id="task-cancel"
    )
    async with asyncio.timeout(SECONDS):
        while not started.exists():
            await asyncio.sleep(0.05)
    fresh.cancel_request(types.CancelParams(id="task-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(pending), SECONDS)
    async with asyncio.timeout(SECONDS):  # the command's process group is gone
        while sleeping():
            await asyncio.sleep(0.05)
    assert not finished.exists()
    assert len(model.requests) == 1  # no turn after the cancel

    # Cancelled while the model is still streaming: the stream is closed.
    model.requests.clear()
    model.script = [Turn(text="thinking...", hold=True)]
    pending = fresh.protocol.send_request(
        "tools/execute", {"tool": "task", "args": task("Think", "general")}, msg_id="task-hold"
    )
    await asyncio.to_thread(model.holding.wait, SECONDS)
    fresh.cancel_request(types.CancelParams(id="task-hold"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(pending), SECONDS)
    assert await asyncio.to_thread(model.hung_up.wait, SECONDS)


def sleeping() -> bool:
    found = subprocess.run(["pgrep", "-f", "sleep 30.5"], capture_output=True)
    return found.returncode == 0


@module_loop
async def test_errors_as_opencode_words_them(fresh: WireClient, model: ScriptedModel) -> None:
    unknown = await fresh.execute("task", task("x", "nosuch"))
    assert unknown["output"] == "Unknown agent type: nosuch is not a valid agent type"
    model.script = [Turn(status=503, error="the model is overloaded")]
    failed = await fresh.execute("task", task("x"))
    child = failed["metadata"]["sessionId"]
    assert failed["output"] == (
        f"Subagent failed (task_id: {child}): the model endpoint {model.base_url}"
        "/chat/completions answered 503: the model is overloaded"
    )
    # A child that calls task at the depth limit gets OpenCode's words.
    deep = {"description": "Nest", "prompt": "again", "subagent_type": "general"}
    model.script = [Turn(calls=[Call("task", deep)]), Turn(text="could not nest")]
    nested = await fresh.execute("task", task("Nest", "nester"))
    assert nested["isError"] is False, nested["output"]
    assert "task" not in [t["function"]["name"] for t in model.requests[-2]["tools"]]
    assert tool_messages(model.requests[-1]) == [
        'Subagent depth limit reached (1). Increase "subagent_depth" to allow nested subagents.'
    ]


@module_loop
async def test_a_child_session_takes_no_calls_after_its_task(
    fresh: WireClient, model: ScriptedModel
) -> None:
    model.script = [Turn(text="hello")]
    result = await fresh.execute("task", task("hello"))
    ended = result["metadata"]["sessionId"]
    late = await fresh.execute("read", {"filePath": "notes.txt"}, sessionID=ended)
    assert late["isError"] is True
    assert "is not running" in late["output"]


@module_loop
async def test_not_listed_without_a_runner(root: Path) -> None:
    async with connect(root, options={"editor": {"permissionAsk": True}}) as plain:
        assert "task" not in await plain.tool_ids()
        result = await plain.execute("task", task("x"))
        assert result["isError"] is True
        assert "Use your own sub-agents" in result["output"]


@module_loop
async def test_a_project_files_provider_is_not_used(root: Path, model: ScriptedModel) -> None:
    (root / ".opencode").mkdir(exist_ok=True)
    config_file = root / ".opencode" / "opencode.json"
    config_file.write_text(json.dumps({"provider": {"evil": model.provider("x")}}))
    try:
        async with connect(root, options={"editor": {"permissionAsk": True}}) as plain:
            assert "task" not in await plain.tool_ids()
    finally:
        config_file.unlink()
