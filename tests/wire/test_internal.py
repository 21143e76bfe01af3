"""An exception inside a tool, or around it, answers an ``internal`` result.

No built-in tool raises on purpose, so this drives the server in-process: the same
``create_server`` and ``receive`` path as ``toolhost serve``, with a capturing
writer instead of stdout and a ToolHost whose tools are chosen by the test.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from server.app import create_server
from server.logs import forward_to_client
from server.options import InitOptions
from server.sidecar import ToolhostServer
from server.state import ServerState
from tools.host import ToolHost
from tools.tool import define


class Capture:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        _, body = data.split(b"\r\n\r\n", 1)
        self.messages.append(json.loads(body))

    def close(self) -> None:
        pass

    async def response(self, msg_id: int) -> dict[str, Any]:
        for _ in range(1000):
            for message in self.messages:
                if message.get("id") == msg_id and "method" not in message:
                    return message
            await asyncio.sleep(0.001)
        raise AssertionError(f"no response to {msg_id}: {self.messages}")


def send(server: ToolhostServer, **message: Any) -> None:
    server.protocol.receive(json.dumps({"jsonrpc": "2.0", **message}).encode())


async def explode(args: Any, ctx: Any) -> str:
    raise ZeroDivisionError("the tool divided by zero")


BOOM = define("boom", execute=explode, description="Raises.")


class BrokenHost(ToolHost):
    async def execute(self, tool_id: str, args: Any, **kwargs: Any):  # type: ignore[override]
        raise RuntimeError("the host fell over")


@pytest.fixture
async def served(tmp_path: Path):
    server = create_server()
    capture = Capture()
    server.protocol.set_writer(capture)
    handler = forward_to_client(server, asyncio.get_running_loop())
    try:
        params = {"processId": None, "capabilities": {}, "rootUri": tmp_path.as_uri()}
        send(server, id=0, method="initialize", params=params)
        assert (await capture.response(0))["result"]["serverInfo"]["name"] == "toolhost"
        yield server, capture
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.parametrize(
    ("host", "needle"),
    [
        (lambda root: ToolHost(root, tools=[BOOM]), "ZeroDivisionError"),
        (BrokenHost, "RuntimeError: the host fell over"),
    ],
)
async def test_internal_result_and_a_log_line_never_a_popup(
    served: tuple[ToolhostServer, Capture], tmp_path: Path, host: Any, needle: str
) -> None:
    server, capture = served
    # The state is normally built from initializationOptions; here the tools are ours.
    server._state = ServerState(InitOptions(), host(tmp_path), "ses_internal")
    send(server, id=1, method="tools/execute", params={"tool": "boom", "args": {}})
    result = (await capture.response(1))["result"]
    assert result["isError"] is True
    assert result["metadata"]["error"] == "internal"
    assert needle in result["output"]
    methods = [m.get("method") for m in capture.messages]
    assert "window/showMessage" not in methods
    logs = [
        m["params"]["message"] for m in capture.messages if m.get("method") == "window/logMessage"
    ]
    assert any(needle.split(":")[0] in log for log in logs), logs
    # The server keeps serving.
    send(server, id=2, method="tools/list", params={})
    assert "tools" in (await capture.response(2))["result"]
