"""The proxy one call's network goes through: it accepts on a listener, tells SOCKS5 (a
first byte of 5) from HTTP, and lets each side ask the call's ``Gate``.

For a bash command the listener is the socket the sandbox made on the loopback of the
command's own network namespace (``tools.bash.sandbox.namespaces``): the proxy accepts
on it from the sidecar, outside that namespace, so the namespace needs no process of
ours and no route. ``loopback`` makes a listener in the sidecar instead, for webfetch,
guarded by a random ``Proxy-Authorization`` (other local programs could reach it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import secrets
import socket
from collections.abc import AsyncIterator

from tools.network import http, socks
from tools.network.gate import Gate
from tools.network.relay import Conn

log = logging.getLogger("toolhost.network")

MAX_CONNECTIONS = 256  # at once, per call: more are closed as they come
FIRST_BYTES_SECONDS = 60.0  # a client that connects and says nothing is let go


class Proxy:
    def __init__(self, gate: Gate, *, auth: str | None = None) -> None:
        self.gate = gate
        self.auth = auth  # the Proxy-Authorization value HTTP requests must carry
        self.listeners: list[socket.socket] = []
        self.accepting: list[asyncio.Task[None]] = []
        self.connections: set[asyncio.Task[None]] = set()

    def serve(self, listener: socket.socket) -> None:
        """Accept on ``listener`` until ``close`` (which closes it)."""
        listener.setblocking(False)
        self.listeners.append(listener)
        self.accepting.append(asyncio.ensure_future(self._accept(listener)))

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except OSError:
                return  # the listener was closed
            if len(self.connections) >= MAX_CONNECTIONS:
                conn.close()
                continue
            task = asyncio.ensure_future(self._handle(conn))
            self.connections.add(task)
            task.add_done_callback(self.connections.discard)

    async def _handle(self, sock: socket.socket) -> None:
        client = Conn(sock)
        try:
            async with asyncio.timeout(FIRST_BYTES_SECONDS):
                first = await client.read(1)
            if not first:
                return
            client.buffer[:0] = first
            if first[0] == socks.VERSION and self.auth is None:
                await socks.serve(client, self.gate)
            elif first[0] in (socks.VERSION, 4):
                await client.write(socks.SOCKS4_REJECTED if first[0] == 4 else b"\x05\xff")
            else:
                await http.serve(client, self.gate, self.auth)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:  # one connection's failure must not reach the call
            log.exception("the network proxy failed on a connection")
        finally:
            client.close()

    async def close(self) -> None:
        """Stop: the listener closes, every connection ends, open asks are withdrawn."""
        self.gate.withdraw()
        tasks = [*self.accepting, *self.connections]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for listener in self.listeners:
            listener.close()
        self.listeners.clear()


@contextlib.asynccontextmanager
async def loopback(gate: Gate) -> AsyncIterator[str]:
    """A proxy on 127.0.0.1 in the sidecar for the duration of the block; its URL (with
    the credentials it requires)."""
    token = secrets.token_urlsafe(24)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    basic = base64.b64encode(f"toolhost:{token}".encode()).decode()
    proxy = Proxy(gate, auth=f"Basic {basic}")
    proxy.serve(listener)
    try:
        yield f"http://toolhost:{token}@127.0.0.1:{port}"
    finally:
        await proxy.close()
