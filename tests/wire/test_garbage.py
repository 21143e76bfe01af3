"""Malformed input on stdin is answered and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.wire.conftest import make_project, spawn_stdio, stop

TIMEOUT = 20


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def message(**fields: Any) -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", **fields}).encode())


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def receive(self) -> dict[str, Any]:
        """The next response (notifications, such as log messages, are skipped)."""
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            header = await asyncio.wait_for(stdout.readuntil(b"\r\n\r\n"), TIMEOUT)
            assert header.startswith(b"Content-Length: "), header
            length = int(header.split(b":")[1])
            body = json.loads(await stdout.readexactly(length))
            if "method" not in body:
                return body


@pytest.fixture
async def raw(tmp_path: Path):
    root = make_project(tmp_path)
    proc = await spawn_stdio(root, tmp_path / "data")
    yield RawServer(proc)
    await stop(proc)


def error_of(response: dict[str, Any]) -> tuple[Any, int]:
    assert response["jsonrpc"] == "2.0"
    return response["id"], response["error"]["code"]


async def test_garbage_is_answered_then_initialize_works(raw: RawServer) -> None:
    raw.send(message(id=1, method="tools/list", params={}))
    assert error_of(await raw.receive()) == (1, -32002)  # not initialized yet

    raw.send(frame(b"{this is not json"))
    assert error_of(await raw.receive()) == (None, -32700)

    # A header without Content-Length: the body that follows cannot be framed.
    raw.send(b'Content-Type: application/json\r\n\r\n{"jsonrpc": "2.0", "id": 99}')
    response = await raw.receive()
    assert error_of(response) == (None, -32700)
    assert "Content-Length" in response["error"]["message"]

    raw.send(b"Content-Length: lots\r\n\r\n")
    assert error_of(await raw.receive()) == (None, -32700)

    raw.send(frame(json.dumps([1, "two", None]).encode()))
    assert error_of(await raw.receive()) == (None, -32600)

    raw.send(frame(b'"just a string"'))
    assert error_of(await raw.receive()) == (None, -32600)

    raw.send(frame(b"\xff\xfe\x00garbage"))
    assert error_of(await raw.receive()) == (None, -32700)

    raw.send(message(id=3, method=5))
    assert error_of(await raw.receive()) == (3, -32600)

    raw.send(frame(json.dumps({"id": 4, "method": "initialize"}).encode()))  # no "jsonrpc"
    assert error_of(await raw.receive()) == (4, -32600)

    raw.send(message(id=5, method="initialize", params=[1, 2]))
    response = await raw.receive()
    assert error_of(response) == (5, -32602)
    assert "initialize" in response["error"]["message"]

    raw.send(message(id=6, method="initialize", params={"processId": None, "capabilities": {}}))
    response = await raw.receive()
    assert response["id"] == 6
    assert response["result"]["serverInfo"]["name"] == "toolhost"

    raw.send(message(id=7, method="tools/execute", params=[{"tool": "read"}]))
    response = await raw.receive()
    assert error_of(response) == (7, -32602)
    assert "params must be an object" in response["error"]["message"]

    raw.send(
        message(
            id=8, method="tools/execute", params={"tool": "read", "args": {"filePath": "notes.txt"}}
        )
    )
    response = await raw.receive()
    assert response["id"] == 8
    assert "alpha" in response["result"]["output"]


async def test_shutdown_and_exit_end_the_process_cleanly(raw: RawServer) -> None:
    raw.send(message(id=1, method="initialize", params={"processId": None, "capabilities": {}}))
    await raw.receive()
    raw.send(message(id=2, method="shutdown"))
    assert (await raw.receive())["id"] == 2
    raw.send(message(id=3, method="tools/list", params={}))
    assert error_of(await raw.receive()) == (3, -32600)  # shutting down
    raw.send(message(method="exit"))
    assert await asyncio.wait_for(raw.proc.wait(), TIMEOUT) == 0


async def test_end_of_input_without_exit_lets_running_calls_answer(raw: RawServer) -> None:
    raw.send(message(id=1, method="initialize", params={"processId": None, "capabilities": {}}))
    await raw.receive()
    raw.send(
        message(
            id=2, method="tools/execute", params={"tool": "read", "args": {"filePath": "notes.txt"}}
        )
    )
    assert raw.proc.stdin is not None
    raw.proc.stdin.close()
    response = await raw.receive()
    assert response["id"] == 2 and "alpha" in response["result"]["output"]
    assert await asyncio.wait_for(raw.proc.wait(), TIMEOUT) == 0
