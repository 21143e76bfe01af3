"""``toolhost mcp``'s side of the handover: attached to an editor's sidecar, it passes its
client's stdio to the sidecar, which then serves the client itself with no second process
on the path of each call (``server.attach.adopt`` says how, and why).

This process then reads nothing and answers nothing: it waits for the sidecar's
``mcp/ended`` (the client closed) and exits, or, if the editor's sidecar goes away first,
serves the client alone again from where the sidecar stopped: the client gets
``notifications/tools/list_changed``, as when a forwarding ``toolhost mcp`` loses its
editor. A request the sidecar had read but not answered when it went away gets no answer.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
from typing import Any

import orjson

from server.attach.rpc import RpcError
from server.mcp.attached import AttachedBackend

log = logging.getLogger("toolhost.mcp")

HANDOVER_SECONDS = 5.0
ENDED = "mcp/ended"


async def hand_over(backend: AttachedBackend, pending: bytes, fds: tuple[int, int]) -> bool:
    """Pass the client's pipes (and the bytes already read from it) to the sidecar;
    True once it has them, False (nothing changed) when it cannot take them."""
    try:
        answer = await asyncio.wait_for(
            backend.peer.request("mcp/adopt", {"pending": base64.b64encode(pending).decode()}),
            HANDOVER_SECONDS,
        )
        path, nonce = answer["socket"], answer["nonce"]
        await asyncio.to_thread(_send, path, nonce, fds)
    except (OSError, TimeoutError, RpcError, KeyError, TypeError) as error:
        log.info("the editor's toolhost did not take the MCP connection (%s): forwarding", error)
        return False
    return True


def _send(path: str, nonce: str, fds: tuple[int, int]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(HANDOVER_SECONDS)
        connection.connect(path)
        socket.send_fds(connection, [nonce.encode()], list(fds))


async def until_ended(backend: AttachedBackend) -> bool:
    """Wait for the handed-over connection to end: True when the client closed it, False
    when the editor's sidecar went away first (this process serves the client then)."""
    ended = asyncio.get_running_loop().create_future()

    def on_ended(_: Any) -> None:
        if not ended.done():
            ended.set_result(None)

    backend.peer.notifications[ENDED] = on_ended
    waits: set[asyncio.Future[Any]] = {ended, backend.peer.closed}
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    return ended.done()


def client_capabilities(opening: bytes) -> dict[str, Any]:
    """The capabilities the client's ``initialize`` declared."""
    try:
        params = orjson.loads(opening).get("params") or {}
    except (orjson.JSONDecodeError, AttributeError):
        return {}
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    return capabilities if isinstance(capabilities, dict) else {}
