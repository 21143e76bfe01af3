"""``toolhost mcp`` over stdio: newline-delimited JSON-RPC in and out, and which door
serves the connection, decided by its first message.

A connection that opens with a handshake-era ``initialize`` (every MCP host in use) is
served by the lean door (``server.mcp.lean``), each line handed over as it arrives. Any
other opening (the 2026-07-28 revision) goes to the SDK's door (``server.mcp.server``),
which then reads the lines from here, the first one included. ``TOOLHOST_MCP_ENGINE=sdk``
sends every connection to the SDK's door (a fallback, and the reference the lean door is
tested against).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from server.mcp.attached import AttachedBackend
from server.mcp.backend import Backend
from server.mcp.handover import client_capabilities, hand_over, until_ended
from server.mcp.lean import LeanMcp, opens_a_handshake
from server.stdio import (
    BlockingWriter,
    PipeWriter,
    StreamEnd,
    open_writer,
    private_stdio,
    read_into,
)

log = logging.getLogger("toolhost.mcp")

MAX_LINE_BYTES = 64 * 1024 * 1024  # a line past this is not a message anyone sends


class LineReader(StreamEnd):
    """Cuts the byte stream into lines as data arrives and hands each to ``deliver``."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        super().__init__()
        self.deliver = deliver
        self.transport: asyncio.ReadTransport | None = None  # None: read by a thread

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\n")) >= 0:
            line = bytes(self.buffer[:end])
            del self.buffer[: end + 1]
            self.deliver(line)
        if len(self.buffer) > MAX_LINE_BYTES:
            log.warning("dropped %d bytes with no end of line", len(self.buffer))
            self.buffer.clear()

    def eof_received(self) -> bool:
        if self.buffer.strip():
            self.deliver(bytes(self.buffer))
        self.buffer.clear()
        self._close()
        return False


@dataclass
class Connection:
    """The client's stdio once its first line is in: the lines that came after it are
    queued until a door takes them."""

    writer: PipeWriter | BlockingWriter
    reader: LineReader
    opening: bytes
    later: asyncio.Queue[bytes | None]
    fds: tuple[int, int]  # the client's pipes (ours: fds 0 and 1 are /dev/null and stderr)

    def unread(self) -> bytes:
        """Everything read from the client and not yet handled, the opening line first."""
        lines = [self.opening]
        while not self.later.empty():
            line = self.later.get_nowait()
            if line is not None:
                lines.append(line)
        rest = bytes(self.reader.buffer)
        self.reader.buffer.clear()
        return b"".join(line + b"\n" for line in lines) + rest


async def serve_stdio(backend: Backend) -> None:
    """Serve one MCP client on this process's stdin and stdout until it closes them."""
    stdin, stdout = private_stdio()
    writer = await open_writer(stdout)
    first: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    later: asyncio.Queue[bytes | None] = asyncio.Queue()

    def before_the_choice(line: bytes) -> None:
        if not line.strip():
            return
        if first.done():
            later.put_nowait(line)
        else:
            first.set_result(line)

    reader = LineReader(before_the_choice)
    await read_into(stdin, reader)
    opening = await _first_line(first, reader)
    if opening is None:
        return
    connection = Connection(writer, reader, opening, later, (stdin.fileno(), stdout.fileno()))
    if os.environ.get("TOOLHOST_MCP_ENGINE") == "sdk":
        await _serve_sdk(backend, connection)
    elif opens_a_handshake(_json(opening)) or await _handshake_while_loading(connection):
        await _serve_lean(backend, connection)
    else:
        await _serve_sdk(backend, connection)


async def _handshake_while_loading(connection: Connection) -> bool:
    """Whether the client sent a handshake ``initialize`` while the SDK's door was still
    loading for its first message (the 2026-07-28 revision's ``server/discover``).

    Claude Code opens with ``server/discover`` and, when no answer comes within about
    2.5 s, falls back to ``initialize``; the SDK's door, once loaded, refuses that (the
    connection serves 2026-07-28). Loading it takes about a second, several on a loaded
    machine: so while it loads, a handshake is served by the lean door instead, which
    answers the opening as a handshake-era server does (method not found)."""
    loading = asyncio.ensure_future(asyncio.to_thread(_load_sdk_door))
    held: list[bytes] = []
    handshake = False
    while not loading.done() and not handshake:
        line = asyncio.ensure_future(connection.later.get())
        await asyncio.wait({loading, line}, return_when=asyncio.FIRST_COMPLETED)
        if line.done():
            held.append(line.result() or b"")
            handshake = opens_a_handshake(_json(held[-1]))
        else:
            line.cancel()
    while not connection.later.empty():  # the lines held here go back first, in order
        held.append(connection.later.get_nowait() or b"")
    for item in held:
        connection.later.put_nowait(item)
    if handshake:
        log.info("the client sent initialize while the SDK loaded: serving the handshake")
    return handshake


def _load_sdk_door() -> None:
    import mcp.server.stdio  # noqa: F401  (about a second of imports)

    import server.mcp.server  # noqa: F401


async def _first_line(first: asyncio.Future[bytes], reader: LineReader) -> bytes | None:
    waits: set[asyncio.Future[Any]] = {first, reader.closed}
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    return first.result() if first.done() else None


def _json(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


async def _serve_lean(backend: Backend, connection: Connection) -> None:
    door = await _hand_over(backend, connection) if _may_hand_over(backend, connection) else None
    if door is None:
        door = LeanMcp(backend, guarded(connection.writer))
        connection.reader.deliver = door.receive_line
        for line in connection.unread().split(b"\n"):
            door.receive_line(line)
    elif door.closed:  # the sidecar served the client to the end
        return
    await connection.reader.closed
    door.close()
    await door.wind_down()
    await connection.writer.drain()


def _may_hand_over(backend: Backend, connection: Connection) -> bool:
    return (
        isinstance(backend, AttachedBackend)
        and backend.alone is None
        and connection.reader.transport is not None  # a pipe, not a file read by a thread
        and os.environ.get("TOOLHOST_MCP_HANDOVER") != "0"
    )


async def _hand_over(backend: Backend, connection: Connection) -> LeanMcp | None:
    """Attached: the editor's sidecar serves the client (``server.mcp.handover``). None
    when it did not take the connection; a closed door when it served it to the end; else
    the door that serves the client here, the sidecar having gone away."""
    assert isinstance(backend, AttachedBackend) and connection.reader.transport is not None
    transport = connection.reader.transport
    transport.pause_reading()
    pending = connection.unread()
    if not await hand_over(backend, pending, connection.fds):
        rest = pending[len(connection.opening) + 1 :]  # served here after all, in order
        for line in rest.split(b"\n"):
            connection.later.put_nowait(line)
        transport.resume_reading()
        return None
    door = LeanMcp(backend, guarded(connection.writer))
    if await until_ended(backend):
        door.closed = True
        return door
    # The sidecar went away mid-session: the client is initialized, so carry on here.
    door.initialized = True
    door.client_capabilities = client_capabilities(connection.opening)
    connection.reader.deliver = door.receive_line
    transport.resume_reading()
    await door.tools_changed()
    return door


def guarded(writer: PipeWriter | BlockingWriter) -> Callable[[bytes], None]:
    """Writes that end quietly when the client has closed our stdout."""

    def write(data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            writer.write(data)

    return write


async def _serve_sdk(backend: Backend, connection: Connection) -> None:
    from mcp.server.stdio import stdio_server  # about a second of imports: only here

    from server.mcp.server import ToolhostMcp

    later = connection.later
    connection.reader.deliver = later.put_nowait
    connection.reader.closed.add_done_callback(lambda _: later.put_nowait(None))
    lines = _TextLines(_lines(connection.opening, later))
    mcp = ToolhostMcp(backend)
    async with stdio_server(stdin=lines, stdout=_TextOut(connection.writer)) as (  # type: ignore[arg-type]
        read_stream,
        write_stream,
    ):
        await mcp.server.run(read_stream, write_stream, mcp.initialization_options())


async def _lines(opening: bytes, later: asyncio.Queue[bytes | None]) -> AsyncIterator[str]:
    yield opening.decode("utf-8", errors="replace")
    while (line := await later.get()) is not None:
        yield line.decode("utf-8", errors="replace")


class _TextLines:
    """The SDK's stdin: the lines read here, as text (``async for``)."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self.lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self.lines


class _TextOut:
    """The SDK's stdout: its text written to our writer."""

    def __init__(self, writer: PipeWriter | BlockingWriter) -> None:
        self.write_bytes = guarded(writer)

    async def write(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    async def flush(self) -> None:
        return None
