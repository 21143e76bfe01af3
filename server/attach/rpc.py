"""A small JSON-RPC 2.0 peer with LSP framing, over any asyncio stream transport.

Both ends of an attach connection use it: the sidecar serving ``toolhost mcp`` on
its Unix socket, and ``toolhost mcp`` calling it.  It does only what those need:
requests both ways with ``$/cancelRequest`` (a cancelled caller withdraws its
request; a withdrawn request's handler is cancelled and answers -32800), and
notifications.  pygls is not used: it serves exactly one client per server, and
``toolhost mcp`` must not pay for importing it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from server.stdio import FrameReader

log = logging.getLogger("toolhost.attach")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
REQUEST_CANCELLED = -32800
CANCEL = "$/cancelRequest"

RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], None]


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def frame(message: Mapping[str, Any]) -> bytes:
    body = orjson.dumps(message)
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


class Peer:
    """One connection.  ``handlers``/``notifications`` answer what the other end sends."""

    def __init__(
        self,
        handlers: Mapping[str, RequestHandler] | None = None,
        notifications: Mapping[str, NotificationHandler] | None = None,
    ) -> None:
        self.handlers = dict(handlers or {})
        self.notifications = dict(notifications or {})
        self.transport: asyncio.WriteTransport | None = None
        self.reader: FrameReader | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._running: dict[Any, asyncio.Task[None]] = {}
        # Set by a server side that must see one request before any other (the token).
        self.gate: Callable[[str, Any], str | None] | None = None

    # -- the transport --------------------------------------------------------

    def protocol(self) -> FrameReader:
        """The asyncio protocol to connect: it cuts frames and feeds them here."""
        peer = self

        class Reader(FrameReader):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                peer.transport = transport  # type: ignore[assignment]

            def connection_lost(self, exc: Exception | None) -> None:
                super().connection_lost(exc)
                peer._lost()

        self.reader = Reader(self)
        return self.reader

    @property
    def closed(self) -> asyncio.Future[None]:
        assert self.reader is not None
        return self.reader.closed

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _write(self, message: Mapping[str, Any]) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame(message))

    def _lost(self) -> None:
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the connection closed"))
        self._waiting.clear()
        for task in self._running.values():
            task.cancel()

    # -- outgoing -------------------------------------------------------------

    def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any = None) -> Any:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionError("the connection is closed")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            self.notify(CANCEL, {"id": msg_id})  # withdraw it; the answer is ignored
            raise
        finally:
            self._waiting.pop(msg_id, None)

    # -- incoming -------------------------------------------------------------

    def framing_error(self, message: str) -> None:
        self._error(None, PARSE_ERROR, f"Parse error: {message}")

    def receive(self, body: bytes) -> None:
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            self._error(None, PARSE_ERROR, f"Parse error: the body is not JSON ({error})")
            return
        if not isinstance(message, dict):
            self._error(None, INVALID_REQUEST, "Invalid request: expected a JSON object")
            return
        method = message.get("method")
        if isinstance(method, str):
            if self.gate is not None:
                refusal = self.gate(method, message.get("params"))
                if refusal is not None:
                    self._error(message.get("id"), INVALID_REQUEST, refusal)
                    self.close()
                    return
            if "id" in message:
                self._start(message["id"], method, message.get("params"))
            else:
                self._notified(method, message.get("params"))
            return
        msg_id = message.get("id")
        future = self._waiting.get(msg_id) if isinstance(msg_id, int) else None
        if future is None or future.done():
            return  # an answer to a withdrawn request
        if "error" in message and isinstance(message["error"], dict):
            fault = message["error"]
            future.set_exception(
                RpcError(int(fault.get("code", 0)), str(fault.get("message")), fault.get("data"))
            )
        else:
            future.set_result(message.get("result"))

    def _notified(self, method: str, params: Any) -> None:
        if method == CANCEL:
            msg_id = params.get("id") if isinstance(params, dict) else None
            task = self._running.get(msg_id)
            if task is not None:
                task.cancel()
            return
        handler = self.notifications.get(method)
        if handler is None:
            return
        try:
            handler(params)
        except Exception:  # one bad notification must not end the connection
            log.exception("handling %s failed", method)

    def _start(self, msg_id: Any, method: str, params: Any) -> None:
        handler = self.handlers.get(method)
        if handler is None:
            self._error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        task = asyncio.get_running_loop().create_task(self._answer(msg_id, handler, params))
        self._running[msg_id] = task

    async def _answer(self, msg_id: Any, handler: RequestHandler, params: Any) -> None:
        try:
            result = await handler(params)
        except asyncio.CancelledError:
            self._error(msg_id, REQUEST_CANCELLED, f"Request {msg_id!r} was cancelled")
            raise
        except RpcError as error:
            self._error(msg_id, error.code, error.message, error.data)
        except Exception as error:
            log.exception("handling request %r failed", msg_id)
            self._error(msg_id, INTERNAL_ERROR, f"Internal error: {error}")
        else:
            self._write({"jsonrpc": "2.0", "id": msg_id, "result": result})
        finally:
            self._running.pop(msg_id, None)

    def _error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._write({"jsonrpc": "2.0", "id": msg_id, "error": error})


async def connect_unix(path: str, peer: Peer, timeout: float = 5.0) -> Peer:
    loop = asyncio.get_running_loop()
    await asyncio.wait_for(loop.create_unix_connection(peer.protocol, path), timeout)
    return peer
