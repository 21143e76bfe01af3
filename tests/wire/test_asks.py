"""Asks as editor prompts: what a ``permission/ask`` carries, every reply, waiting asks
settled by another reply, withdrawn prompts, a closed connection, and the fallbacks."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcRequestCancelled

import tests.wire.conftest as wire
from tests.wire.conftest import (
    PROMPTING,
    WireClient,
    connect,
    make_project,
    run_toolhost,
    spawn_stdio,
)

module_loop = pytest.mark.asyncio(loop_scope="module")

ASKS = {"permission": {"edit": "ask", "bash": "ask", "webfetch": "ask"}}
SECONDS = 10


class ScriptedClient(WireClient):
    """A WireClient whose ``ask_reply`` may also be an exception: the answer is then a
    JSON-RPC error (the editor failed to show the prompt)."""

    @property
    def ask_reply(self) -> Any:
        if isinstance(self._reply, Exception):
            raise self._reply
        return self._reply

    @ask_reply.setter
    def ask_reply(self, value: Any) -> None:
        self._reply = value


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("asks")


@pytest.fixture(scope="module")
def root(base: Path) -> Path:
    return make_project(base)


@pytest.fixture(scope="module", autouse=True)
def hermetic(base: Path) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        # connect() builds its client from this name.
        patch.setattr(wire, "WireClient", ScriptedClient)
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path) -> AsyncIterator[WireClient]:
    options = {"editor": {"permissionAsk": True}, "sessionID": "ses_main", "config": ASKS}
    async with connect(root, options=options) as client:
        yield client


@pytest.fixture
def fresh(client: WireClient) -> WireClient:
    client.asks.clear()
    client.asked.clear()
    client.ask_reply = {"reply": "once"}
    return client


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"command": command, "description": "Runs a test command", **extra}


def start(client: WireClient, tool: str, args: dict[str, Any], msg_id: str, **extra: Any) -> Any:
    """Send a tools/execute without waiting for it."""
    params = {"tool": tool, "args": args, **extra}
    return client.protocol.send_request("tools/execute", params, msg_id=msg_id)


async def result_of(pending: Future[Any]) -> dict[str, Any]:
    return await asyncio.wait_for(asyncio.wrap_future(pending), SECONDS)


async def asks_reach(client: WireClient, count: int) -> None:
    async with asyncio.timeout(SECONDS):
        while len(client.asks) < count:
            await asyncio.sleep(0.02)


def withdrawn(client: WireClient) -> Future[Any]:
    """Resolves when the server sends $/cancelRequest (withdrawing one of its prompts)."""
    return client.protocol.wait_for_notification("$/cancelRequest")


@module_loop
async def test_what_each_prompt_carries(fresh: WireClient, root: Path, base: Path) -> None:
    client = fresh
    ran = await client.execute(
        "bash", bash("echo hi", workdir="src"), callID="call_b", messageID="msg_b"
    )
    assert ran["output"].strip() == "hi", ran
    await client.execute("bash", bash("echo there"))
    wrote = await client.execute("write", {"filePath": "written.txt", "content": "alpha\n"})
    assert wrote["isError"] is False
    client.ask_reply = {"reply": "reject"}
    await client.execute("read", {"filePath": ".env"})
    await client.execute("webfetch", {"url": "https://example.invalid/page"})
    outside = base / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("x")
    await client.execute("read", {"filePath": str(outside / "secret.txt")})

    by_title = {ask["title"]: ask for ask in client.asks}
    assert list(by_title) == [
        "Run `echo hi` in src/",
        "Run `echo there` in the project root",
        "Create written.txt (new file)",
        "Read .env",
        "Fetch https://example.invalid/page",
        f"Access files outside the project: {outside.as_posix()}/*",
    ]
    command = by_title["Run `echo hi` in src/"]
    assert command["sessionID"] == "ses_main"
    assert (command["callID"], command["messageID"]) == ("call_b", "msg_b")
    assert (command["tool"], command["permission"]) == ("bash", "bash")
    assert command["metadata"]["command"] == "echo hi"
    assert command["metadata"]["workdir"] == str(root / "src")
    assert command["patterns"] == ["echo hi"]
    assert command["always"] == ["echo *"]  # what an "always" reply would allow
    edit = by_title["Create written.txt (new file)"]
    assert edit["permission"] == "edit" and edit["patterns"] == ["written.txt"]
    assert "+alpha" in edit["metadata"]["diff"]
    (created, inserted) = edit["metadata"]["edit"]["documentChanges"]  # the exact change
    assert created["kind"] == "create" and created["uri"].endswith("/written.txt")
    assert "alpha" in inserted["edits"][0]["newText"]
    fetch = by_title["Fetch https://example.invalid/page"]
    assert fetch["metadata"]["url"] == "https://example.invalid/page"
    external = by_title[f"Access files outside the project: {outside.as_posix()}/*"]
    assert external["permission"] == "external_directory"
    assert external["always"] == [f"{outside.as_posix()}/*"]


REPLIES = {
    "once": ({"reply": "once"}, None),
    "reject": ({"reply": "reject"}, "The user rejected permission"),
    "reject with a message": (
        {"reply": "reject", "message": "use printf instead"},
        "with the following feedback: use printf instead",
    ),
    "an unknown reply": ({"reply": "sure"}, "(`reply` must be once, always or reject)"),
    "not an object": ("once", "(the answer is not an object)"),
    "a message that is not text": ({"reply": "once", "message": 5}, "`message` must be a string"),
    "hunks that are not a list": ({"reply": "once", "hunks": "a.py#1"}, "`hunks` must be a list"),
    "an unknown scope": ({"reply": "always", "scope": "forever"}, "`scope` must be one of"),
}


@module_loop
@pytest.mark.parametrize("case", list(REPLIES))
async def test_every_reply(fresh: WireClient, root: Path, case: str) -> None:
    reply, refusal = REPLIES[case]
    fresh.ask_reply = reply
    marker = root / f"reply-{len(case)}-{case.replace(' ', '-')}.txt"
    result = await fresh.execute("bash", bash(f"touch {marker.name}"), sessionID=f"ses_{case}")
    assert len(fresh.asks) == 1
    if refusal is None:
        assert result["isError"] is False, result["output"]
        assert marker.exists()
        again = await fresh.execute("bash", bash(f"touch {marker.name}"))
        assert again["isError"] is False
        assert len(fresh.asks) == 2  # once is for this call only
        return
    assert result["isError"] is True
    assert result["metadata"]["error"] == "permission_rejected"
    assert refusal in result["output"]
    assert not marker.exists()


@module_loop
async def test_a_client_error_is_a_rejection(tmp_path: Path) -> None:
    # Its own connection: pytest-lsp fails a test whose client fixture's handler raises.
    root = make_project(tmp_path)
    options = {"editor": {"permissionAsk": True}, "config": ASKS}
    async with connect(root, options=options) as client:
        client.ask_reply = JsonRpcInternalError("the prompt could not be shown")
        result = await client.execute("write", {"filePath": "x.txt", "content": "x"})
        assert result["metadata"]["error"] == "permission_rejected"
        assert "could not answer" in result["output"]
        assert not (root / "x.txt").exists()


@module_loop
async def test_reject_rejects_the_sessions_other_waiting_asks(fresh: WireClient) -> None:
    client = fresh
    client.ask_reply = None  # the first prompt is never answered
    first = start(client, "bash", bash("echo one"), "wait-1", sessionID="ses_reject")
    other_session = start(client, "bash", bash("echo other"), "wait-2", sessionID="ses_else")
    await asks_reach(client, 2)
    cancelled = withdrawn(client)
    client.ask_reply = {"reply": "reject", "message": "stop"}
    second = await client.execute("bash", bash("echo two"), sessionID="ses_reject")
    assert "stop" in second["output"]
    result = await result_of(first)
    assert result["metadata"]["error"] == "permission_rejected"
    await asyncio.wait_for(asyncio.wrap_future(cancelled), SECONDS)  # its prompt withdrawn
    # Another session's ask still waits; cancel it to finish.
    assert not other_session.done()
    client.cancel_request(types.CancelParams(id="wait-2"))
    with pytest.raises(JsonRpcRequestCancelled):
        await result_of(other_session)


@module_loop
async def test_cancelling_a_call_withdraws_its_prompt(fresh: WireClient, root: Path) -> None:
    client = fresh
    client.ask_reply = None
    pending = start(client, "write", {"filePath": "never.txt", "content": "x"}, "cancel-ask")
    await asks_reach(client, 1)
    cancelled = withdrawn(client)
    client.cancel_request(types.CancelParams(id="cancel-ask"))
    with pytest.raises(JsonRpcRequestCancelled):
        await result_of(pending)
    params = await asyncio.wait_for(asyncio.wrap_future(cancelled), SECONDS)
    assert str(params.id).startswith("toolhost-")  # the server's own permission/ask request
    assert not (root / "never.txt").exists()


@module_loop
async def test_a_prompt_shown_without_permission_ask_can_allow_always(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    options = {"config": {"permission": {"edit": "ask"}}}
    async with connect(root, options=options, capabilities=PROMPTING) as client:
        client.prompt_choice = "Always allow: this file (a.txt)"
        for content in ("x", "y"):
            result = await client.execute("write", {"filePath": "a.txt", "content": content})
            assert result["isError"] is False, result["output"]
        [prompt] = client.prompts
        assert prompt.message.startswith("Create a.txt (new file)")
        # "Always" says what it covers: this file only.
        client.prompt_choice = "Reject"
        result = await client.execute("write", {"filePath": "b.txt", "content": "x"})
        assert result["metadata"]["error"] == "permission_rejected"


@module_loop
async def test_headless_rejection_says_how_to_allow_it(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    async with connect(root, options={"config": {"permission": {"bash": "ask"}}}) as client:
        result = await client.execute("bash", bash("echo hi"))
        assert result["metadata"]["error"] == "permission_rejected"
        assert "no one could be asked" in result["output"]
        assert '{"permission": {"bash": {"echo hi": "allow"}}}' in result["output"]
        assert "opencode.json" in result["output"]


@module_loop
async def test_always_settles_the_waiting_asks_it_covers(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    options = {"editor": {"permissionAsk": True}, "config": {"permission": {"edit": "ask"}}}
    async with connect(root, options=options) as client:
        client.ask_reply = None
        waiting = start(client, "write", {"filePath": "first.txt", "content": "1"}, "first")
        await asks_reach(client, 1)
        cancelled = withdrawn(client)
        client.ask_reply = {"reply": "always", "alwaysOption": "all"}  # every file
        second = await client.execute("write", {"filePath": "second.txt", "content": "2"})
        assert second["isError"] is False, second["output"]
        first = await result_of(waiting)  # settled without an answer to its own prompt
        assert first["isError"] is False, first["output"]
        assert (root / "first.txt").read_text() == "1"
        await asyncio.wait_for(asyncio.wrap_future(cancelled), SECONDS)
        third = await client.execute("write", {"filePath": "third.txt", "content": "3"})
        assert third["isError"] is False
        assert len(client.asks) == 2


async def test_a_closed_connection_rejects_the_waiting_ask(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    proc = await spawn_stdio(root, tmp_path / "data")
    assert proc.stdin is not None and proc.stdout is not None
    stdout = proc.stdout

    def send(**message: Any) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert proc.stdin is not None
        proc.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    async def receive() -> dict[str, Any]:
        header = await asyncio.wait_for(stdout.readuntil(b"\r\n\r\n"), SECONDS)
        return json.loads(await stdout.readexactly(int(header.split(b":")[1])))

    try:
        options = {"editor": {"permissionAsk": True}, "config": {"permission": {"edit": "ask"}}}
        initialize = {
            "capabilities": {},
            "rootUri": root.as_uri(),
            "initializationOptions": options,
        }
        send(id=1, method="initialize", params=initialize)
        send(method="initialized", params={})
        args = {"filePath": "orphan.txt", "content": "x"}
        send(id=2, method="tools/execute", params={"tool": "write", "args": args})
        while (message := await receive()).get("method") != "permission/ask":
            pass
        proc.stdin.close()  # the editor went away without answering
        while (message := await receive()).get("id") != 2:
            pass
        result = message["result"]
        assert result["metadata"]["error"] == "permission_rejected"
        assert "could not answer" in result["output"]
        assert not (root / "orphan.txt").exists()
        await asyncio.wait_for(proc.wait(), SECONDS)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_toolhost_run_rejects_unless_yes(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / "opencode.json").write_text('{"permission": {"bash": "ask"}}')

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return run_toolhost("run", "bash", json.dumps(bash("echo ran")), *extra, cwd=root)

    done = run()
    assert done.returncode == 1
    assert "no one could be asked" in done.stderr and "--yes" in done.stderr
    done = run("--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran"
