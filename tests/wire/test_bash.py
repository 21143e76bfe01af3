"""A running command over the wire: progress updates, and cancellation ending it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from tests.wire.conftest import WireClient, connect, make_project, serve_to

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("bash"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root, options={"sessionID": "ses_bash"}) as client:
        yield client


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_updates_and_progress_follow_the_output(client: WireClient) -> None:
    token = 7
    client.progress_reports.setdefault(token, [])  # as if the client had created it
    result = await client.execute(
        "bash",
        {"command": "echo one; sleep 0.3; echo two", "description": "Count to two"},
        callID="call_bash",
        messageID="msg_bash",
        workDoneToken=token,
    )
    assert result["isError"] is False, result["output"]
    assert result["output"].split() == ["one", "two"]
    assert client.updates, "a running command reports what it printed"
    for update in client.updates:
        assert update["sessionID"] == "ses_bash"
        assert update["callID"] == "call_bash"
        assert update["messageID"] == "msg_bash"
        assert isinstance(update["metadata"], dict)
    assert "one" in client.updates[-1]["metadata"]["output"]
    reports = client.progress_reports[token]
    assert reports[0].kind == "begin" and reports[-1].kind == "end"
    assert any(r.kind == "report" and r.message == "Count to two" for r in reports)


async def test_cancel_ends_the_command_and_the_server_goes_on(
    client: WireClient, root: Path
) -> None:
    pid_file = root / "pid.txt"
    pending = client.protocol.send_request(
        "tools/execute",
        {
            "tool": "bash",
            "args": {"command": f"echo $$ > {pid_file}; exec sleep 60", "description": "Wait"},
        },
        msg_id="bash-cancel",
    )
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    assert alive(pid)
    client.cancel_request(types.CancelParams(id="bash-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(pending), 10)
    for _ in range(100):
        if not alive(pid):
            break
        await asyncio.sleep(0.05)
    assert not alive(pid), "the cancelled command is still running"
    result = await client.execute("bash", {"command": "echo still here", "description": "Echo"})
    assert result["output"].strip() == "still here"


# ---------------------------------------------------------------- the sidecar goes away


def sleeping(mark: str) -> list[int]:
    """Live processes whose cmdline is `sleep <mark>`."""
    wanted = b"sleep\0" + mark.encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.endswith(wanted) and state != b"Z":
            found.append(int(name))
    return found


LEFT_RUNNING = (
    "sleep {m} & (setsid sleep {m} &); env -i setsid -f /bin/sleep {m}; "
    "nohup sleep {m} >/dev/null 2>&1 & echo started"
)


@pytest.mark.parametrize("ending", ["exit", "SIGKILL"])
async def test_when_the_sidecar_ends_nothing_it_started_survives(
    tmp_path: Path, ending: str
) -> None:
    """Background jobs outlive the command (a server started with `&` keeps running),
    but not the sidecar: however it ends, every process it started ends too."""
    mark = f"{os.getpid()}{len(ending)}.{random.randint(100, 999)}"
    root = make_project(tmp_path)
    killed = contextlib.suppress(RuntimeError) if ending == "SIGKILL" else contextlib.nullcontext()
    try:
        with killed:  # the client cannot shut down a server that is gone
            async with serve_to(WireClient(), root) as client:
                result = await client.execute(
                    "bash", {"command": LEFT_RUNNING.format(m=mark), "description": "Leave jobs"}
                )
                assert result["output"].strip() == "started", result["output"]
                for _ in range(100):
                    if len(sleeping(mark)) == 4:
                        break
                    await asyncio.sleep(0.05)
                assert len(sleeping(mark)) == 4  # left running after the command
                if ending == "SIGKILL":
                    server = client._server
                    assert server is not None
                    server.kill()  # no shutdown, no exit, no cleanup of its own
                    await server.wait()
        for _ in range(100):
            if not sleeping(mark):
                break
            await asyncio.sleep(0.05)
        assert sleeping(mark) == []
    finally:
        for pid in sleeping(mark):
            os.kill(pid, signal.SIGKILL)
