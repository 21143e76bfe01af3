"""A stranger's idle connections cannot keep the token holder off ``--tcp``.

Real loopback sockets against the real listener (``server.sockets``); the JSON-RPC
side is a recorder, since only who gets in matters here.  The attack opens 20
connections that send nothing, then the token holder connects: with the defence off
(the old admission: refuse a newcomer once 16 wait) the user is refused; with it on,
the user is let in, and an idle connection is closed once its time is up.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from server import sockets

TOKEN = "f" * 32
IDLE = 20


class Recorder:
    """Stands in for the JSON-RPC protocol: records the frames of the client let in."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.writer: Any = None

    def receive(self, body: bytes) -> None:
        self.bodies.append(body)

    def set_writer(self, writer: Any) -> None:
        self.writer = writer


def initialize(token: str) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"initializationOptions": {"token": token}},
        }
    ).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


async def start() -> tuple[sockets.TcpListener, int]:
    listener = sockets.TcpListener(Recorder(), TOKEN)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    listener.server = await loop.create_server(
        lambda: sockets.TcpConnection(listener), "127.0.0.1", 0
    )
    return listener, listener.server.sockets[0].getsockname()[1]


async def idle_connections(port: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    found = [await asyncio.open_connection("127.0.0.1", port) for _ in range(IDLE)]
    await asyncio.sleep(0)  # let the listener see them all
    return found


async def user_gets_in(listener: sockets.TcpListener, port: int) -> bool:
    """Connect and send the token; True once the listener has let this client in."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(initialize(TOKEN))
    await writer.drain()
    claimed = asyncio.ensure_future(asyncio.shield(listener.client))
    closed = asyncio.ensure_future(reader.read())  # b"" once the listener closes it
    await asyncio.wait([claimed, closed], timeout=5, return_when=asyncio.FIRST_COMPLETED)
    for task in (claimed, closed):
        task.cancel()
    writer.close()
    return listener.client.done()


def old_admission(monkeypatch: pytest.MonkeyPatch) -> None:
    def admit(self: sockets.TcpListener, connection: sockets.TcpConnection) -> bool:
        if self.client.done() or len(self.pending) >= 16:
            return False
        self.pending[connection] = "?"
        return True

    monkeypatch.setattr(sockets.TcpListener, "admit", admit)


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_idle_strangers_cannot_lock_the_user_out(
    defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        old_admission(monkeypatch)
    listener, port = await start()
    strangers = await idle_connections(port)
    try:
        let_in = await user_gets_in(listener, port)
        assert let_in is (defence == "on")  # off: the attack works, the user is refused
        if defence == "on":
            assert listener.pending == {}  # the strangers were let go once the user was in
    finally:
        for _, writer in strangers:
            writer.close()
        assert listener.server is not None
        listener.server.close()


async def test_an_idle_connection_is_closed_when_its_time_is_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sockets, "AUTH_SECONDS", 0.2)
    listener, port = await start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the listener
        assert not listener.client.done()
    finally:
        writer.close()
        assert listener.server is not None
        listener.server.close()


def test_the_bounds_are_a_few_seconds_and_a_few_per_peer() -> None:
    assert sockets.AUTH_SECONDS <= 5
    assert sockets.PENDING_PER_PEER < IDLE <= sockets.MAX_PENDING
