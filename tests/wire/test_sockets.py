"""`toolhost serve --tcp` and `--ws`: one client per server, and the server ends with it.

Real servers on free loopback ports, driven over real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.wire.conftest import TOOLHOST, Framed, listening, make_project, server_env

SECONDS = 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@contextlib.contextmanager
def paused(proc: asyncio.subprocess.Process) -> Iterator[None]:
    """The server process stopped (SIGSTOP) for the block, then continued."""
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)


async def turned_away(client: Framed) -> bool:
    """True when the server closes ``client`` without answering its initialize."""
    client.send(id=1, method="initialize", params={"capabilities": {}})
    try:
        return await asyncio.wait_for(client.reader.read(), SECONDS) == b""
    except ConnectionResetError:
        return True


# --- TCP ------------------------------------------------------------------------------------


async def test_tcp_serves_the_first_client_only(root: Path, tmp_path: Path) -> None:
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        # Two clients at the same moment: while the server is stopped, both connections
        # wait in the listen backlog, so it accepts both at once.
        with paused(proc):
            first_socket = socket.create_connection(("127.0.0.1", port))
            second_socket = socket.create_connection(("127.0.0.1", port))
        first = Framed(*await asyncio.open_connection(sock=first_socket))
        second = Framed(*await asyncio.open_connection(sock=second_socket))

        await first.initialize(root)
        assert await turned_away(second)
        with pytest.raises(ConnectionRefusedError):  # no longer listening
            await Framed.tcp(port)

        first.send(
            id=2, method="tools/execute", params={"tool": "read", "args": {"filePath": "notes.txt"}}
        )
        assert "alpha" in (await first.answer_to(2))["result"]["output"]
        first.send(id=3, method="shutdown")
        await first.answer_to(3)
        first.send(method="exit")
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0


async def test_tcp_server_ends_when_its_client_leaves_once_running_calls_finish(
    root: Path, tmp_path: Path
) -> None:
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        client = await Framed.tcp(port)
        await client.initialize(root)
        command = "sleep 1 && echo done > finished.txt"
        args = {"command": command, "description": "Writes a file after a second"}
        client.send(id=2, method="tools/execute", params={"tool": "bash", "args": args})
        client.close()  # gone without shutdown or exit, the call still running

        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0
        assert (root / "finished.txt").read_text() == "done\n"


# --- WebSocket ------------------------------------------------------------------------------


def initialize_message(root: Path) -> str:
    params = {"capabilities": {}, "rootUri": root.as_uri()}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})


async def answered(ws: ClientConnection, msg_id: int) -> dict[str, Any]:
    while True:  # skip notifications (logMessage and the like)
        message = json.loads(await asyncio.wait_for(ws.recv(), SECONDS))
        if message.get("id") == msg_id:
            return message


async def test_ws_serves_the_first_client_only(root: Path, tmp_path: Path) -> None:
    async with listening("--ws", root, tmp_path / "data") as (proc, port):
        url = f"ws://127.0.0.1:{port}"
        # Two clients at once (both wait in the backlog while the server is stopped):
        # one is served, the other closed.
        with paused(proc):
            attempts = [asyncio.ensure_future(connect(url)) for _ in range(2)]
            await asyncio.sleep(0.2)  # both connect and send their upgrade requests
        connected = [await attempt for attempt in attempts]
        served = []
        for ws in connected:
            try:
                await ws.send(initialize_message(root))
                assert "capabilities" in (await answered(ws, 1))["result"]
                served.append(ws)
            except ConnectionClosed:
                pass
        assert len(served) == 1
        with pytest.raises(OSError):  # no longer listening
            await connect(url)

        (ws,) = served
        shutdown = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
        await ws.send(json.dumps(shutdown))
        await answered(ws, 2)
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "exit"}))
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0
        for ws in connected:
            await ws.close()


async def test_ws_takes_binary_frames_and_ends_when_the_connection_drops(
    root: Path, tmp_path: Path
) -> None:
    async with listening("--ws", root, tmp_path / "data") as (proc, port):
        ws = await connect(f"ws://127.0.0.1:{port}")
        await ws.send(initialize_message(root).encode())  # a binary frame
        assert "capabilities" in (await answered(ws, 1))["result"]

        ws.transport.abort()  # no close frame: the connection just drops

        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0


async def test_ws_without_the_websockets_package_says_what_to_install(
    root: Path, tmp_path: Path
) -> None:
    # An environment where `import websockets` fails, as in an install without pygls[ws].
    shadow = tmp_path / "shadow" / "websockets"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('websockets is not installed')\n")
    env = server_env(tmp_path / "data")
    env["PYTHONPATH"] = str(shadow.parent)
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "serve",
        "--ws",
        "127.0.0.1:0",
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=root,
        env=env,
    )
    _, stderr = await asyncio.wait_for(proc.communicate(), SECONDS)

    assert proc.returncode == 2
    assert "--ws needs the websockets package (pip install 'pygls[ws]')" in stderr.decode()
    assert "Traceback" not in stderr.decode()
