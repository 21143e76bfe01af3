"""``task`` run by the editor (``agent/task``): the client runs the sub-agent's loop and
calls back with ``tools/list`` / ``tools/execute`` in the child session, where the
child's rules apply; cancelling the parent withdraws ``agent/task`` and ends the
child's running calls."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

import tests.wire.conftest as wire
from tests.openai_server import ScriptedModel
from tests.wire.conftest import WireClient, connect, make_project

module_loop = pytest.mark.asyncio(loop_scope="module")
SECONDS = 20

Loop = Callable[["EditorRunnerClient", dict[str, Any]], Awaitable[Any]]


class EditorRunnerClient(WireClient):
    """Answers ``agent/task`` by running ``loop`` (the test's stand-in for a model)."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks: list[dict[str, Any]] = []
        self.loop: Loop | None = None
        self.child_results: list[dict[str, Any]] = []

        @self.feature("agent/task")
        async def agent_task(ls: EditorRunnerClient, params: dict[str, Any]) -> Any:
            ls.tasks.append(params)
            assert ls.loop is not None
            return await ls.loop(ls, params)

    async def in_child(self, params: dict[str, Any], tool: str, args: dict[str, Any]) -> Any:
        result = await self.execute(tool, args, sessionID=params["sessionID"])
        self.child_results.append(result)
        return result


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("task-editor")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        yield make_project(base)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path) -> AsyncIterator[EditorRunnerClient]:
    unused = ScriptedModel()  # configured but never reached: the editor runs first
    config = {
        "provider": {"local": unused.provider("m")},
        "agent": {
            "nobash": {"mode": "subagent", "description": "No commands", "tools": {"bash": False}}
        },
    }
    options = {"editor": {"task": True, "permissionAsk": True}, "config": config}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wire, "WireClient", EditorRunnerClient)
        async with connect(root, options=options) as client:
            assert isinstance(client, EditorRunnerClient)
            yield client
    assert unused.requests == []


@module_loop
async def test_the_editor_runs_the_loop_in_the_child_session(client: EditorRunnerClient) -> None:
    catalogues: list[list[str]] = []

    async def loop(ls: EditorRunnerClient, params: dict[str, Any]) -> Any:
        listed = await ls.call("tools/list", {"sessionID": params["sessionID"]})
        catalogues.append([t["id"] for t in listed["tools"]])
        read = await ls.in_child(params, "read", {"filePath": "notes.txt"})
        assert "beta" in read["output"]
        # The client names another agent: the child's own is used all the same.
        bash = await ls.execute(
            "bash",
            {"command": "echo hi", "description": "Says hi"},
            sessionID=params["sessionID"],
            agent="build",
        )
        ls.child_results.append(bash)
        return {"output": "notes.txt has three lines."}

    client.loop = loop
    result = await client.execute(
        "task",
        {
            "description": "Count lines",
            "prompt": "How long is notes.txt?",
            "subagent_type": "nobash",
        },
        callID="call_parent",
        sessionID="ses_parent",
    )
    assert result["isError"] is False, result["output"]
    sent = client.tasks[-1]
    child = sent["sessionID"]
    assert result["output"].startswith(f'<task id="{child}" state="completed">\n<task_result>\n')
    assert "notes.txt has three lines." in result["output"]
    assert sent["parentSessionID"] == "ses_parent" and sent["callID"] == "call_parent"
    assert sent["subagentType"] == "nobash" and sent["resume"] is False
    assert sent["prompt"] == "How long is notes.txt?"
    assert sent["agent"]["description"] == "No commands"
    assert result["metadata"]["runner"] == "editor"
    (catalogue,) = catalogues
    assert "read" in catalogue
    assert not {"bash", "task", "todowrite", "todoread"} & set(catalogue)
    bash = client.child_results[-1]
    assert bash["isError"] is True and bash["metadata"]["error"] == "permission_denied"
    assert [c["tool"] for c in result["metadata"]["calls"]] == ["read", "bash"]
    updates = [u for u in client.updates if u.get("callID") == "call_parent"]
    assert {c["tool"] for u in updates for c in u["metadata"]["calls"]} == {"read", "bash"}

    # task_id resumes the same child session; the editor is told to continue it.
    client.loop = lambda ls, params: _answer("again")
    again = await client.execute(
        "task",
        {
            "description": "Count again",
            "prompt": "And now?",
            "subagent_type": "nobash",
            "task_id": child,
        },
        sessionID="ses_parent",
    )
    assert f'<task id="{child}"' in again["output"]
    assert client.tasks[-1]["resume"] is True and client.tasks[-1]["sessionID"] == child


async def _answer(text: str) -> dict[str, str]:
    return {"output": text}


@module_loop
async def test_an_editor_error_is_a_failed_subagent(client: EditorRunnerClient) -> None:
    async def loop(ls: EditorRunnerClient, params: dict[str, Any]) -> Any:
        return {"nothing": True}

    client.loop = loop
    result = await client.execute(
        "task", {"description": "x", "prompt": "x", "subagent_type": "general"}
    )
    assert result["isError"] is True
    assert result["output"].startswith("Subagent failed (task_id: ses_")
    assert "without an output" in result["output"]


@module_loop
async def test_cancel_withdraws_the_task_and_ends_its_calls(
    client: EditorRunnerClient, root: Path
) -> None:
    child_call: dict[str, Any] = {}
    release = asyncio.Event()

    async def loop(ls: EditorRunnerClient, params: dict[str, Any]) -> Any:
        child_call["pending"] = ls.protocol.send_request(
            "tools/execute",
            {
                "tool": "bash",
                "args": {"command": "sleep 30.7", "description": "Waits"},
                "sessionID": params["sessionID"],
            },
        )
        await release.wait()
        return {"output": "late"}

    client.loop = loop
    client.ask_reply = {"reply": "once"}
    pending = client.protocol.send_request(
        "tools/execute",
        {
            "tool": "task",
            "args": {"description": "Wait", "prompt": "w", "subagent_type": "general"},
        },
        msg_id="editor-task-cancel",
    )
    async with asyncio.timeout(SECONDS):
        while not sleeping():
            await asyncio.sleep(0.05)
    withdrawn = client.protocol.wait_for_notification("$/cancelRequest")
    named = client.protocol.wait_for_notification("editor/withdrawn")
    client.cancel_request(types.CancelParams(id="editor-task-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(pending), SECONDS)
    params = await asyncio.wait_for(asyncio.wrap_future(withdrawn), SECONDS)
    assert str(params.id).startswith("toolhost-")  # the server's agent/task request
    which = await asyncio.wait_for(asyncio.wrap_future(named), SECONDS)
    assert which == {"method": "agent/task", "id": client.tasks[-1]["id"]}
    with pytest.raises(JsonRpcRequestCancelled):  # the child's command was ended too
        await asyncio.wait_for(asyncio.wrap_future(child_call["pending"]), SECONDS)
    async with asyncio.timeout(SECONDS):
        while sleeping():
            await asyncio.sleep(0.05)
    release.set()


def sleeping() -> bool:
    return subprocess.run(["pgrep", "-f", "sleep 30.7"], capture_output=True).returncode == 0
