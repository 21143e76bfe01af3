"""TCP and WebSocket transports, for clients that cannot spawn a process.

One client per server, as over stdio, and only one that presents the sidecar's
token (``server.lockfile``; ``docs/protocol.md``, "Attach"):

- TCP: the first frame's header carries ``Authorization: Bearer <token>``, or the
  frame is ``initialize`` with ``initializationOptions.token``.  Until then the
  framing is strict (no resync), input shaped like HTTP is answered ``400`` and
  closed, and any fault closes the connection before a request has run.
- WebSocket: ``Authorization: Bearer <token>`` on the upgrade request (else 401);
  an upgrade with an ``Origin`` header is refused (403) unless the origin was
  allowed (``--allow-origin``): every web page can open a socket to loopback.

Connections that have not authenticated do not claim the server, and cannot keep
the user out: each has ``AUTH_SECONDS`` to present the token, at most
``PENDING_PER_PEER`` may wait from one address (``MAX_PENDING`` in all), and a new
connection is always let in, the oldest waiting one from its address (or, when all
are full, from the busiest address) let go to make room.  So idle connections from
a stranger only ever push out each other: the token holder, who sends the token as
soon as it connects, is let in.  Once a client is in, the listener closes and the
server ends when that client disconnects.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from server.lockfile import tokens_match
from server.stdio import LSP_HEADERS, FrameReader, PipeWriter, content_length, read_fields

if TYPE_CHECKING:
    from server.protocol import ToolhostProtocol

log = logging.getLogger("toolhost.transport")

WIND_DOWN_SECONDS = 10.0
# A connection must present the token this soon; this many may wait, from one address
# and in all (the oldest is let go for a new one).
AUTH_SECONDS = 3.0
PENDING_PER_PEER = 8
MAX_PENDING = 32
FIRST_FRAME_HEADERS = LSP_HEADERS | {b"authorization"}

# An HTTP request line (RFC 9112), or the start of one: "GET ", "POST /x HTTP/1.1".
_HTTP_START = re.compile(
    rb"(?:GET|HEAD|POST|PUT|DELETE|CONNECT|OPTIONS|TRACE|PATCH|PRI)[ \t]"
    rb"|[A-Za-z]+[ \t]+\S+[ \t]+HTTP/",
)
_BEARER = re.compile(rb"bearer[ \t]+(\S+)", re.IGNORECASE)

HTTP_REFUSAL = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%b"
)
HTTP_REFUSAL_TEXT = b"This is a toolhost JSON-RPC port (LSP framing), not an HTTP server.\n"

Announce = Callable[[str, int], None]


def bearer_token(value: bytes | str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value, else None."""
    if value is None:
        return None
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else value
    match = _BEARER.fullmatch(raw.strip())
    return match.group(1).decode("latin-1") if match else None


def initialize_token(body: bytes) -> object:
    """``initializationOptions.token`` of an ``initialize`` request body, else None."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("method") != "initialize":
        return None
    params = data.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    return options.get("token") if isinstance(options, dict) else None


class TcpConnection(FrameReader):
    """One TCP client: strict and silent until it has shown the token."""

    def __init__(self, listener: TcpListener) -> None:
        super().__init__(listener.protocol)
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.authenticated = False
        self._presented: str | None = None  # the first frame's Authorization token
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if not self.listener.admit(self):
            transport.close()
            return
        self._deadline = asyncio.get_running_loop().call_later(
            AUTH_SECONDS, self.refuse, "it did not present the token in time"
        )

    def data_received(self, data: bytes) -> None:
        if self.authenticated:
            super().data_received(data)
            return
        self.buffer += data
        if _HTTP_START.match(self.buffer[:64]):
            self.refuse("it spoke HTTP", http_answer=True)
            return
        try:
            while not self.authenticated and self.transport is not None:
                body = self._next_body()
                if body is None:
                    return
                self.deliver(body)
        except _Refused as refused:
            self.refuse(str(refused))
            return
        if self.authenticated and self.buffer:
            super().data_received(b"")  # frames that came with the first one

    def header(self, block: bytes) -> tuple[int | None, str | None, bool]:
        if self.authenticated:
            return super().header(block)
        fields, problem = read_fields(block, FIRST_FRAME_HEADERS)
        if problem is None and b"authorization" in fields:
            self._presented = bearer_token(fields[b"authorization"])
            if self._presented is None:
                problem = "its Authorization header is not `Bearer <token>`"
        length = None
        if problem is None:
            length, problem = content_length(fields)
        if problem is not None:
            raise _Refused(f"its first message was not LSP framing ({problem})")
        return length, None, False

    def _fault(self, message: str) -> None:
        if not self.authenticated:
            raise _Refused(message)
        super()._fault(message)

    def deliver(self, body: bytes) -> None:
        if self.authenticated:
            super().deliver(body)
            return
        presented = self._presented or initialize_token(body)
        if not tokens_match(presented, self.listener.token):
            raise _Refused("it did not present the token" if presented is None else "wrong token")
        self.authenticated = True
        if self._deadline is not None:
            self._deadline.cancel()
        self.listener.claim(self)
        super().deliver(body)

    def refuse(self, why: str, *, http_answer: bool = False) -> None:
        if self.authenticated or self.transport is None:
            return
        peer = self.transport.get_extra_info("peername")
        log.warning("refused a TCP client from %s: %s", peer, why)
        if http_answer:
            self.transport.write(HTTP_REFUSAL % (len(HTTP_REFUSAL_TEXT), HTTP_REFUSAL_TEXT))
        self.transport.close()
        self.transport = None
        self.buffer.clear()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self.listener.forget(self)
        super().connection_lost(exc)


class _Refused(Exception):
    """A connection that has not authenticated did something that ends it."""


class TcpListener:
    def __init__(self, protocol: ToolhostProtocol, token: str) -> None:
        self.protocol = protocol
        self.token = token
        self.pending: dict[TcpConnection, str] = {}  # oldest first, with its peer's address
        self.client: asyncio.Future[TcpConnection] = asyncio.get_running_loop().create_future()
        self.server: asyncio.Server | None = None

    def admit(self, connection: TcpConnection) -> bool:
        """Let a new connection wait for its token, making room by letting the oldest go."""
        if self.client.done():
            return False
        peer = _peer_host(connection.transport)
        same = [c for c, host in self.pending.items() if host == peer]
        if len(same) >= PENDING_PER_PEER:
            self._let_go(same[0], f"more than {PENDING_PER_PEER} connections from {peer} waited")
        elif len(self.pending) >= MAX_PENDING:
            counts: dict[str, int] = {}
            for host in self.pending.values():
                counts[host] = counts.get(host, 0) + 1
            busiest = max(counts, key=lambda host: counts[host])
            oldest = next(c for c, host in self.pending.items() if host == busiest)
            self._let_go(oldest, f"more than {MAX_PENDING} connections waited")
        self.pending[connection] = peer
        return True

    def _let_go(self, connection: TcpConnection, why: str) -> None:
        self.pending.pop(connection, None)
        connection.refuse(f"{why} to present the token; the oldest was let go")

    def forget(self, connection: TcpConnection) -> None:
        self.pending.pop(connection, None)

    def claim(self, connection: TcpConnection) -> None:
        """The first client to authenticate is the one: everyone else is let go."""
        assert connection.transport is not None
        self.pending.pop(connection, None)
        for other in list(self.pending):
            other.refuse("another client has attached")
        self.pending.clear()
        if self.server is not None:
            self.server.close()
        log.info("client attached from %s", connection.transport.get_extra_info("peername"))
        self.protocol.set_writer(PipeWriter(connection.transport))
        self.client.set_result(connection)


def _peer_host(transport: asyncio.BaseTransport | None) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if isinstance(peer, tuple) and peer else "?"


async def serve_tcp(
    protocol: ToolhostProtocol, host: str, port: int, *, token: str, announce: Announce
) -> None:
    loop = asyncio.get_running_loop()
    listener = TcpListener(protocol, token)
    listener.server = await loop.create_server(lambda: TcpConnection(listener), host, port)
    _announce(listener.server.sockets, announce)
    connection = await listener.client
    await connection.closed
    await protocol.wind_down(WIND_DOWN_SECONDS)


async def serve_ws(
    protocol: ToolhostProtocol,
    host: str,
    port: int,
    *,
    token: str,
    origins: Collection[str] = (),
    announce: Announce,
) -> None:
    try:
        from websockets.asyncio.server import serve
    except ImportError:
        raise SystemExit(
            "toolhost: --ws needs the websockets package (pip install 'pygls[ws]')"
        ) from None
    from pygls.io_ import WebSocketWriter

    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    claimed = False

    def check(connection: Any, request: Any) -> Any:
        """Refuse the upgrade (with an HTTP answer) unless the client may attach."""
        origin = request.headers.get("Origin")
        if origin is not None and origin not in origins:
            log.warning("refused a WebSocket upgrade from origin %s", origin)
            return connection.respond(
                http.HTTPStatus.FORBIDDEN,
                f"Origin {origin} is not allowed: toolhost accepts browser pages only from "
                "origins given with --allow-origin.\n",
            )
        presented = bearer_token(request.headers.get("Authorization"))
        if not tokens_match(presented, token):
            log.warning(
                "refused a WebSocket upgrade: %s", "no token" if not presented else "wrong token"
            )
            return connection.respond(
                http.HTTPStatus.UNAUTHORIZED,
                "Present the sidecar's token: Authorization: Bearer <token> (see its lock file).\n",
            )
        if claimed:
            return connection.respond(http.HTTPStatus.CONFLICT, "A client is already attached.\n")
        return None

    async def on_client(websocket: Any) -> None:
        nonlocal claimed
        if claimed:
            await websocket.close()
            return
        claimed = True
        listener.close(close_connections=False)
        protocol.set_writer(WebSocketWriter(websocket), include_headers=False)
        try:
            async for message in websocket:
                protocol.receive(message.encode() if isinstance(message, str) else message)
            await protocol.wind_down(WIND_DOWN_SECONDS)
        except Exception as error:  # the connection dropped
            log.info("websocket closed: %s", error)
        finally:
            if not finished.done():
                finished.set_result(None)

    listener = await serve(on_client, host, port, process_request=check)
    _announce(listener.sockets, announce)
    await finished


def _announce(sockets: Any, announce: Announce) -> None:
    for sock in sockets:
        address = sock.getsockname()
        announce(address[0], address[1])  # the lock file first: a client may read it at once
        log.info("listening on %s:%s", address[0], address[1])
