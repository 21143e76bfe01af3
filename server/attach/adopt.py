"""The sidecar side of a handed-over MCP connection: ``toolhost mcp`` passes its client's
stdio here, and the sidecar serves that client itself.

Attached, ``toolhost mcp`` would otherwise forward every call to the sidecar and every
answer back: a second process on the path of each call. Instead, once the client's
``initialize`` is in, it asks ``mcp/adopt`` over the attach socket. The sidecar opens a
one-time Unix socket (mode 0600, in the runtime folder, named with a random nonce) and
answers its path; ``toolhost mcp`` sends the nonce and the two pipe file descriptors
over it (``SCM_RIGHTS``). The sidecar then runs the lean MCP door (``server.mcp.lean``)
on those pipes with a backend that runs each call as an attached call (the editor's
bridge: unsaved buffers, its review, its diagnostics), and tells ``toolhost mcp`` with
``mcp/ended`` when the client closes. ``toolhost mcp`` stays as it was started, reading
nothing, so the client sees the process it spawned; if the editor closes first, it
serves the client itself again (``server.mcp.handover``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from server import lockfile

if TYPE_CHECKING:
    from server.mcp.backend import CallHooks

log = logging.getLogger("toolhost.attach")

HANDOVER_SECONDS = 5.0
Progress = Callable[[dict[str, Any]], None]


class Adopter(Protocol):
    """What adopting needs of the attached connection (``server.attach.listener``'s)."""

    adopted: set[asyncio.Task[None]]  # the MCP clients it serves

    @property
    def editor(self) -> str: ...

    async def tools_list(self, params: Any) -> dict[str, Any]: ...

    async def tools_execute(
        self, params: Any, progress: Progress | None = None
    ) -> dict[str, Any]: ...

    def watch_tools(self, changed: Callable[[], None]) -> Callable[[], None]:
        """Call ``changed`` when the catalogue changes, until the returned function is called."""
        ...

    def ended(self) -> None:
        """Tell ``toolhost mcp`` the client closed (``mcp/ended``)."""
        ...


class AdoptedBackend:
    """The calls of an adopted MCP client, run in the sidecar as an attached client's are."""

    def __init__(self, client: Adopter) -> None:
        self.client = client
        self.on_changed: Any = None

    @property
    def describe(self) -> str:
        return "an MCP client adopted from toolhost mcp"

    async def start(self) -> None:
        return None

    async def list_tools(self) -> list[dict[str, Any]]:
        listing = await self.client.tools_list({})
        tools: list[dict[str, Any]] = listing["tools"]
        return tools

    async def call(self, tool: str, args: dict[str, Any], hooks: CallHooks) -> dict[str, Any]:
        result = await self.client.tools_execute(
            {"tool": tool, "args": args}, progress=hooks.progress
        )
        result.setdefault("metadata", {})
        result["metadata"]["attachedTo"] = {
            "editor": self.client.editor,
            "pid": os.getpid(),
        }
        return result

    async def close(self) -> None:
        return None


async def adopt(client: Adopter, params: Any) -> dict[str, Any]:
    """``mcp/adopt {pending}``: open the one-time socket and serve what comes through it."""
    pending = params.get("pending") if isinstance(params, dict) else None
    try:
        already = base64.b64decode(pending or "", validate=True)
    except ValueError:
        from server.attach.rpc import INVALID_PARAMS, RpcError

        raise RpcError(INVALID_PARAMS, "mcp/adopt: pending must be base64") from None
    nonce = secrets.token_hex(16)
    path = lockfile.runtime_dir() / f"handover-{os.getpid()}-{nonce[:12]}.sock"
    listening = listen_once(path)
    task = asyncio.get_running_loop().create_task(_serve(client, listening, path, nonce, already))
    client.adopted.add(task)
    task.add_done_callback(client.adopted.discard)
    return {"socket": str(path), "nonce": nonce}


def listen_once(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # 0600, never wider
    try:
        listening.bind(str(path))
    finally:
        os.umask(old_umask)
    listening.listen(1)
    listening.settimeout(HANDOVER_SECONDS)
    return listening


def receive_pipes(listening: socket.socket, path: Path, nonce: str) -> tuple[int, int] | None:
    """The two descriptors, once the peer that knows the nonce sends them (a thread)."""
    try:
        connection, _ = listening.accept()
        with connection:
            connection.settimeout(HANDOVER_SECONDS)
            message, fds, _, _ = socket.recv_fds(connection, 64, 2)
            if message != nonce.encode() or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                log.warning("refused an MCP handover without the nonce")
                return None
            return fds[0], fds[1]
    except OSError as error:
        log.warning("the MCP handover did not arrive: %s", error)
        return None
    finally:
        listening.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


async def _serve(
    client: Adopter, listening: socket.socket, path: Path, nonce: str, already: bytes
) -> None:
    from server.mcp.lean import LeanMcp
    from server.mcp.stdio import LineReader, guarded
    from server.stdio import open_writer, read_into

    fds = await asyncio.to_thread(receive_pipes, listening, path, nonce)
    if fds is None:
        return
    stdin, stdout = os.fdopen(fds[0], "rb"), os.fdopen(fds[1], "wb")
    writer = await open_writer(stdout)
    backend = AdoptedBackend(client)
    door = LeanMcp(backend, guarded(writer))
    unwatch = client.watch_tools(_tools_changed(door))
    reader = LineReader(door.receive_line)
    for line in already.split(b"\n"):
        door.receive_line(line)
    await read_into(stdin, reader)
    log.info("serving an MCP client handed over by toolhost mcp")
    try:
        await reader.closed
    finally:
        door.close()
        unwatch()
    # The client closed its end: say so, so that toolhost mcp ends too. (Cancelled, when
    # the sidecar stops, it says nothing: toolhost mcp then serves the client itself.)
    await door.wind_down()
    await writer.drain()
    writer.close()
    client.ended()


def _tools_changed(door: Any) -> Any:
    def changed() -> None:
        if not door.closed:
            asyncio.get_running_loop().create_task(door.tools_changed())

    return changed
