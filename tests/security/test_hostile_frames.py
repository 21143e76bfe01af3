"""Hostile frames on every transport: answered by the spec, and the server stays up.

- JSON nested 100 000 deep is past what Python's parser (and every recursive walker
  after it) can take: it used to raise ``RecursionError`` out of the reader, which
  ended the --tcp/--ws server.  Now: -32700 (too deep to parse) or -32600 (parsed,
  but deeper than any message needs).
- LSP's lifecycle: requests before ``initialize`` are -32002, a ``shutdown`` too, so a
  later ``initialize`` still works.
- Arguments with NUL bytes, lone surrogates or 1 MB paths are ``invalid_arguments``
  naming the field (a NUL in ``filePath`` used to be answered ``internal``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect as ws_connect

from tests.wire.conftest import attach_token, listening, make_project, spawn_stdio

TIMEOUT = 20
DEEP = b"[" * 100_000 + b"]" * 100_000
# Parses (below the recursion limit) but is deeper than MAX_DEPTH.
FAIRLY_DEEP = '{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"x": %s}}' % (
    "[" * 200 + "]" * 200
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def request(msg_id: int, method: str, params: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


Send = Callable[[bytes], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


@asynccontextmanager
async def stdio(root: Path, data: Path, token: bool) -> AsyncIterator[tuple[Send, Receive]]:
    proc = await spawn_stdio(root, data)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def send(body: bytes) -> None:
        stdin.write(frame(body))
        await stdin.drain()

    async def receive() -> dict[str, Any]:
        return await read_response(stdout)

    try:
        yield send, receive
    finally:
        proc.kill()
        await proc.wait()


@asynccontextmanager
async def tcp(root: Path, data: Path, token: bool) -> AsyncIterator[tuple[Send, Receive]]:
    async with listening("--tcp", root, data) as (proc, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        first = [f"Authorization: Bearer {attach_token(proc.pid)}\r\n".encode()]

        async def send(body: bytes) -> None:
            head = first.pop() if first else b""
            writer.write(head + frame(body))
            await writer.drain()

        async def receive() -> dict[str, Any]:
            return await read_response(reader)

        yield send, receive
        writer.close()


@asynccontextmanager
async def websocket(root: Path, data: Path, token: bool) -> AsyncIterator[tuple[Send, Receive]]:
    async with listening("--ws", root, data) as (proc, port):
        headers = {"Authorization": f"Bearer {attach_token(proc.pid)}"}
        async with ws_connect(
            f"ws://127.0.0.1:{port}", additional_headers=headers, max_size=None
        ) as ws:

            async def send(body: bytes) -> None:
                await ws.send(body.decode())

            async def receive() -> dict[str, Any]:
                while True:
                    message = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                    if "method" not in message:
                        return message

            yield send, receive


async def read_response(stream: asyncio.StreamReader) -> dict[str, Any]:
    while True:
        header = await asyncio.wait_for(stream.readuntil(b"\r\n\r\n"), TIMEOUT)
        body = json.loads(await stream.readexactly(int(header.split(b":")[1])))
        if "method" not in body:
            return body


TRANSPORTS = {"stdio": stdio, "tcp": tcp, "ws": websocket}


def test_the_payload_is_past_what_the_parser_can_take() -> None:
    """With no defence, this is what escaped the reader and ended the server."""
    with pytest.raises(RecursionError):
        json.loads(DEEP)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_deep_nesting_is_answered_and_the_server_stays_up(
    transport: str, root: Path, tmp_path: Path
) -> None:
    async with TRANSPORTS[transport](root, tmp_path / "data", True) as (send, receive):
        await send(request(1, "initialize", {"capabilities": {}, "rootUri": root.as_uri()}))
        assert (await receive())["id"] == 1
        await send(DEEP)
        answer = await receive()
        assert answer["id"] is None and answer["error"]["code"] == -32700
        assert "nested too deeply" in answer["error"]["message"]
        await send(FAIRLY_DEEP.encode())
        answer = await receive()
        assert answer["id"] == 7 and answer["error"]["code"] == -32600
        assert "nested too deeply" in answer["error"]["message"]
        args = {"filePath": "notes.txt"}
        await send(request(2, "tools/execute", {"tool": "read", "args": args}))
        assert "alpha" in (await receive())["result"]["output"]


async def test_requests_before_initialize_are_32002_and_shutdown_does_not_poison(
    root: Path, tmp_path: Path
) -> None:
    async with stdio(root, tmp_path / "data", False) as (send, receive):
        await send(request(1, "shutdown"))
        answer = await receive()
        assert (answer["id"], answer["error"]["code"]) == (1, -32002)
        await send(request(2, "tools/list", {}))
        assert (await receive())["error"]["code"] == -32002
        await send(request(3, "initialize", {"capabilities": {}, "rootUri": root.as_uri()}))
        assert (await receive())["result"]["serverInfo"]["name"] == "toolhost"
        await send(request(4, "initialize", {"capabilities": {}}))
        answer = await receive()
        assert answer["error"]["code"] == -32600 and "only once" in answer["error"]["message"]
        await send(request(5, "tools/list", {}))
        assert "tools" in (await receive())["result"]
        await send(request(6, "shutdown"))
        assert (await receive())["result"] is None


@pytest.mark.parametrize(
    ("tool", "args", "field", "problem"),
    [
        ("read", {"filePath": "notes\u0000.txt"}, "filePath", "NUL byte"),
        ("write", {"filePath": "a\ud800.txt", "content": "x"}, "filePath", "unpaired surrogate"),
        ("write", {"filePath": "a.txt", "content": "\udfff"}, "content", "unpaired surrogate"),
        ("read", {"filePath": "a" * 1_000_000}, "filePath", "a path is at most 4096 bytes"),
        ("glob", {"pattern": "*\u0000"}, "pattern", "NUL byte"),
        (
            "multiedit",
            {"filePath": "notes.txt", "edits": [{"oldString": "a", "newString": "\ud83d"}]},
            "edits[0].newString",
            "unpaired surrogate",
        ),
    ],
)
async def test_malformed_arguments_are_invalid_arguments_naming_the_field(
    root: Path, tmp_path: Path, tool: str, args: dict[str, Any], field: str, problem: str
) -> None:
    async with stdio(root, tmp_path / "data", False) as (send, receive):
        await send(request(1, "initialize", {"capabilities": {}, "rootUri": root.as_uri()}))
        await receive()
        # json.dumps writes a lone surrogate as its \\u escape, as a hostile client would.
        await send(request(2, "tools/execute", {"tool": tool, "args": args}))
        result = (await receive())["result"]
        assert result["isError"] and result["metadata"]["error"] == "invalid_arguments"
        assert f"- {field}: " in result["output"] and problem in result["output"]
        assert not list(root.glob("a*.txt"))
