"""Authenticated attach: --tcp and --ws run nothing for a client without the token.

Every attack sends the same payload, a ``bash`` call that writes a marker file. It is
first shown to work when the client presents the token (the gate open), then refused
without it, with nothing run.
"""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from server import lockfile
from tests.wire.conftest import TOOLHOST, attach_token, listening, make_project

TIMEOUT = 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def frame(message: dict[str, Any], *headers: str) -> bytes:
    body = json.dumps(message).encode()
    head = "".join(f"{h}\r\n" for h in headers)
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def payload(root: Path, marker: Path, token: str | None = None) -> list[dict[str, Any]]:
    options = {"token": token} if token else {}
    return [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "capabilities": {},
                "rootUri": root.as_uri(),
                "initializationOptions": options,
            },
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/execute",
            "params": {"tool": "bash", "args": {"command": f"touch {marker}", "description": "m"}},
        },
    ]


async def read_frames(reader: asyncio.StreamReader) -> list[dict[str, Any]]:
    """Every frame until the connection closes or the bash call is answered."""
    frames: list[dict[str, Any]] = []
    while True:
        try:
            header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        except asyncio.IncompleteReadError:
            return frames
        length = int(header.split(b":")[1])
        frames.append(json.loads(await reader.readexactly(length)))
        if frames[-1].get("id") == 2:
            return frames


async def tcp_attack(port: int, data: bytes) -> tuple[list[dict[str, Any]], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if data.startswith(b"Content-Length") or data.startswith(b"Authorization"):
        frames = await read_frames(reader)
        rest = b""
    else:
        frames, rest = [], await asyncio.wait_for(reader.read(), TIMEOUT)
    writer.close()
    return frames, rest


async def test_the_lock_file_holds_a_private_token_and_goes_with_the_sidecar(
    root: Path, tmp_path: Path
) -> None:
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        (info,) = [i for i in lockfile.discover() if i.pid == proc.pid]
        assert info.transport == "tcp" and info.port == port and info.host == "127.0.0.1"
        assert info.path is not None and stat.S_IMODE(info.path.stat().st_mode) == 0o600
        assert len(info.token) == 32 and info.editor == "unknown"
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(payload(root, tmp_path / "m", info.token)[0]))
        assert (await read_frames_until(reader, 1))["result"]["serverInfo"]["name"] == "toolhost"
        writer.close()  # the client leaves: the sidecar ends and takes its lock file along
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    assert not info.path.exists()


async def read_frames_until(reader: asyncio.StreamReader, msg_id: int) -> dict[str, Any]:
    while True:
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        message = json.loads(await reader.readexactly(int(header.split(b":")[1])))
        if message.get("id") == msg_id:
            return message


async def test_tcp_without_the_token_runs_nothing(root: Path, tmp_path: Path) -> None:
    marker = root / "pwned"
    # The gate open: the same calls with the token run the command.
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        token = attach_token(proc.pid)
        data = b"".join(frame(m) for m in payload(root, marker, token))
        frames, _ = await tcp_attack(port, data)
        assert frames[-1]["result"]["isError"] is False
        assert marker.exists()
        # The lock file names the client's folder once it has initialized.
        (info,) = [i for i in lockfile.discover() if i.pid == proc.pid]
        assert str(root) in info.workspace_folders
    marker.unlink()
    for token in (None, "0" * 32):
        async with listening("--tcp", root, tmp_path / "data") as (proc, port):
            data = b"".join(frame(m) for m in payload(root, marker, token))
            frames, _ = await tcp_attack(port, data)
            assert frames == []  # closed before any answer
            await asyncio.sleep(0.5)
            assert not marker.exists()
            # A stranger who connected first did not lock the user out.
            good = b"".join(frame(m) for m in payload(root, marker, attach_token(proc.pid)))
            frames, _ = await tcp_attack(port, good)
            assert frames[-1]["result"]["isError"] is False
        marker.unlink()


async def test_tcp_accepts_the_token_as_an_authorization_header(root: Path, tmp_path: Path) -> None:
    marker = root / "pwned"
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        messages = payload(root, marker)
        auth = f"Authorization: Bearer {attach_token(proc.pid)}"
        data = frame(messages[0], auth) + b"".join(frame(m) for m in messages[1:])
        frames, _ = await tcp_attack(port, data)
        assert frames[-1]["result"]["isError"] is False and marker.exists()


async def test_http_on_the_tcp_port_is_refused(root: Path, tmp_path: Path) -> None:
    """An HTTP request (what a web page can send to any port) never becomes JSON-RPC."""
    marker = root / "pwned"
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        token = attach_token(proc.pid)
        messages = payload(root, marker, token)
        body = b"".join(frame(m) for m in messages)
        request = (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(body), body)
        )
        frames, answer = await tcp_attack(port, request)
        assert answer.startswith(b"HTTP/1.1 400 Bad Request")
        assert b"not an HTTP server" in answer
        await asyncio.sleep(0.5)
        assert not marker.exists()
        # Non-LSP headers before the token are refused too, without an answer.
        frames, _ = await tcp_attack(port, b"X-Evil: 1\r\n" + body)
        assert frames == [] and not marker.exists()


def ws_messages(root: Path, marker: Path) -> list[str]:
    return [json.dumps(m) for m in payload(root, marker)]


async def ws_attack(port: int, root: Path, marker: Path, **headers: str) -> list[dict[str, Any]]:
    received = []
    async with ws_connect(f"ws://127.0.0.1:{port}", additional_headers=headers) as ws:
        for message in ws_messages(root, marker):
            await ws.send(message)
        while True:
            received.append(json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)))
            if received[-1].get("id") == 2:
                return received


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer " + "0" * 32}, 401),
        ({"Origin": "https://evil.example", "Authorization": "{token}"}, 403),
    ],
    ids=["no-token", "wrong-token", "evil-origin"],
)
async def test_websocket_without_the_token_or_from_a_web_page_is_refused(
    root: Path, tmp_path: Path, headers: dict[str, str], status: int
) -> None:
    marker = root / "pwned"
    async with listening("--ws", root, tmp_path / "data") as (proc, port):
        bearer = {"Authorization": f"Bearer {attach_token(proc.pid)}"}
        sent = {k: bearer["Authorization"] if v == "{token}" else v for k, v in headers.items()}
        with pytest.raises(InvalidStatus) as refused:
            await ws_attack(port, root, marker, **sent)
        assert refused.value.response.status_code == status
        await asyncio.sleep(0.5)
        assert not marker.exists()
        # The gate open: the user's client, with the token and no Origin, runs the call.
        answers = await ws_attack(port, root, marker, **bearer)
        assert answers[-1]["result"]["isError"] is False
        assert marker.exists()


async def test_websocket_accepts_an_allowed_origin(root: Path, tmp_path: Path) -> None:
    marker = root / "pwned"
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "serve",
        "--ws",
        "127.0.0.1:0",
        "--allow-origin",
        "https://app.example",
        stderr=asyncio.subprocess.PIPE,
        cwd=root,
    )
    try:
        assert proc.stderr is not None
        while b"listening on" not in (line := await asyncio.wait_for(proc.stderr.readline(), 20)):
            assert line
        port = int(line.rsplit(b":", 1)[1])
        bearer = f"Bearer {attach_token(proc.pid)}"
        answers = await ws_attack(
            port, root, marker, Origin="https://app.example", Authorization=bearer
        )
        assert answers[-1]["result"]["isError"] is False, answers[-1]
        assert marker.exists()
    finally:
        proc.kill()
        await proc.wait()
