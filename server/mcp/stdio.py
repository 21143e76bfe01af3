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
from typing import Any

import orjson

from server.mcp.backend import Backend
from server.mcp.lean import LeanMcp, opens_a_handshake
from server.stdio import BlockingWriter, PipeWriter, open_writer, private_stdio, read_into

log = logging.getLogger("toolhost.mcp")

MAX_LINE_BYTES = 64 * 1024 * 1024  # a line past this is not a message anyone sends


class LineReader(asyncio.Protocol):
    """Cuts the byte stream into lines as data arrives and hands each to ``deliver``."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self.deliver = deliver
        self.buffer = bytearray()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

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

    def connection_lost(self, exc: Exception | None) -> None:
        self._close()

    def _close(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


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
    if os.environ.get("TOOLHOST_MCP_ENGINE") != "sdk" and opens_a_handshake(_json(opening)):
        await _serve_lean(backend, writer, reader, opening, later)
    else:
        await _serve_sdk(backend, writer, reader, opening, later)


async def _first_line(first: asyncio.Future[bytes], reader: LineReader) -> bytes | None:
    waits: set[asyncio.Future[Any]] = {first, reader.closed}
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    return first.result() if first.done() else None


def _json(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


async def _serve_lean(
    backend: Backend,
    writer: PipeWriter | BlockingWriter,
    reader: LineReader,
    opening: bytes,
    later: asyncio.Queue[bytes | None],
) -> None:
    door = LeanMcp(backend, _guarded(writer))
    reader.deliver = door.receive_line
    door.receive_line(opening)
    while not later.empty():
        line = later.get_nowait()
        if line is not None:
            door.receive_line(line)
    await reader.closed
    door.close()
    await door.wind_down()
    await writer.drain()


def _guarded(writer: PipeWriter | BlockingWriter) -> Callable[[bytes], None]:
    """Writes that end quietly when the client has closed our stdout."""

    def write(data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            writer.write(data)

    return write


async def _serve_sdk(
    backend: Backend,
    writer: PipeWriter | BlockingWriter,
    reader: LineReader,
    opening: bytes,
    later: asyncio.Queue[bytes | None],
) -> None:
    from mcp.server.stdio import stdio_server  # about a second of imports: only here

    from server.mcp.server import ToolhostMcp

    reader.deliver = later.put_nowait
    reader.closed.add_done_callback(lambda _: later.put_nowait(None))
    later_lines = _lines(opening, later)
    mcp = ToolhostMcp(backend)
    async with stdio_server(stdin=_TextLines(later_lines), stdout=_TextOut(writer)) as (  # type: ignore[arg-type]
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
        self.write_bytes = _guarded(writer)

    async def write(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    async def flush(self) -> None:
        return None
