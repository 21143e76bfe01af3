"""TCP and WebSocket transports, for clients that cannot spawn a process.

One client per server, as over stdio: the listener closes once a client connects,
and the server ends when that client disconnects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from server.stdio import FrameReader, PipeWriter

if TYPE_CHECKING:
    from server.protocol import ToolhostProtocol

log = logging.getLogger("toolhost.transport")

WIND_DOWN_SECONDS = 10.0


async def serve_tcp(protocol: ToolhostProtocol, host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    first: asyncio.Future[FrameReader] = loop.create_future()

    class Connection(FrameReader):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            if first.done():  # one client per server
                transport.close()
                return
            first.set_result(self)
            listener.close()
            log.info("client connected from %s", transport.get_extra_info("peername"))
            protocol.set_writer(PipeWriter(transport))  # type: ignore[arg-type]

    listener = await loop.create_server(lambda: Connection(protocol), host, port)
    _announce(listener.sockets)
    connection = await first
    await connection.closed
    await protocol.wind_down(WIND_DOWN_SECONDS)


async def serve_ws(protocol: ToolhostProtocol, host: str, port: int) -> None:
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

    listener = await serve(on_client, host, port)
    _announce(listener.sockets)
    await finished


def _announce(sockets: Any) -> None:
    for sock in sockets:
        address = sock.getsockname()
        log.info("listening on %s:%s", address[0], address[1])
