"""LSP base framing, read with asyncio, and the stdio transport.

pygls reads stdin through a thread pool, one executor hop per header line.  Here
stdin is an asyncio pipe (``loop.connect_read_pipe``) and stdout an asyncio write
transport, so a request costs no thread switch.  ``FrameReader`` cuts the byte
stream into bodies; a framing fault (no or bad ``Content-Length``, an oversized
header) is answered through ``Receiver.framing_error`` and the reader
resynchronises on the next ``Content-Length`` header, so one bad frame never ends
the session.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from typing import BinaryIO, Protocol

HEADER_END = b"\r\n\r\n"
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 512 * 1024 * 1024
CHUNK_BYTES = 64 * 1024

_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)
_HEADER_LINES = re.compile(rb"(?:[!-9;-~]+[ \t]*:[^\r\n]*\r\n)*")


class Receiver(Protocol):
    def receive(self, body: bytes) -> None: ...

    def framing_error(self, message: str) -> None: ...


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


def parse_header(block: bytes) -> tuple[int | None, str | None, bool]:
    """``(length, problem, skipped_garbage)`` for one header block ending in CRLF CRLF.

    The last ``Content-Length`` wins, so bytes left over from a broken frame in front
    of a good header are skipped rather than taken as part of it.
    """
    found = None
    for found in _CONTENT_LENGTH.finditer(block):  # noqa: B007 - we want the last one
        pass
    if found is None:
        return None, "the message header has no Content-Length", False
    garbage = _HEADER_LINES.fullmatch(block, 0, found.start()) is None
    value = found.group(1).strip()
    if not value.isdigit():
        return None, f"Content-Length must be a number of bytes, got {value[:40]!r}", garbage
    length = int(value)
    if length > MAX_BODY_BYTES:
        return None, f"Content-Length {length} exceeds the {MAX_BODY_BYTES}-byte limit", garbage
    return length, None, garbage


class FrameReader(asyncio.Protocol):
    """Cuts the incoming byte stream into bodies as data arrives.

    Parsing inside ``data_received`` (rather than in a reader task) saves an event
    loop round per message.  ``closed`` resolves when the stream ends.
    """

    def __init__(self, sink: Receiver) -> None:
        self.sink = sink
        self.buffer = bytearray()
        self.length: int | None = None  # the body length, once its header is read
        self.resyncing = False  # after a reported fault, skipped bytes are not re-reported
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (body := self._next_body()) is not None:
            self.sink.receive(body)

    def eof_received(self) -> bool:
        if (self.buffer.strip() or self.length is not None) and not self.resyncing:
            self.sink.framing_error("the stream ended inside a message")
        self.buffer.clear()
        self._close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._close()

    def _close(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def _next_body(self) -> bytes | None:
        buffer = self.buffer
        while self.length is None:
            end = buffer.find(HEADER_END)
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    self._fault(f"no end of message header within {MAX_HEADER_BYTES} bytes")
                    del buffer[: -len(HEADER_END)]
                return None
            block = bytes(buffer[: end + len(HEADER_END)])
            del buffer[: end + len(HEADER_END)]
            length, problem, garbage = parse_header(block)
            if problem is not None:
                # A header without a length right after a fault is that fault's debris.
                if not (self.resyncing and "no Content-Length" in problem):
                    self.sink.framing_error(problem)
                self.resyncing = True
                continue
            if garbage and not self.resyncing:
                self.sink.framing_error("skipped bytes that were not a message header")
            self.length = length
        if len(buffer) < self.length:
            return None
        body = bytes(buffer[: self.length])
        del buffer[: self.length]
        self.length = None
        self.resyncing = False
        return body

    def _fault(self, message: str) -> None:
        if not self.resyncing:
            self.sink.framing_error(message)
        self.resyncing = True


class PipeWriter:
    """Non-blocking writes to an asyncio write transport (pygls's writer interface)."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport

    def write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.transport.close()

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait (bounded) until everything written has reached the pipe."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.transport.get_write_buffer_size() and loop.time() < deadline:
            await asyncio.sleep(0.01)


class BlockingWriter:
    """For a stdout that is a regular file, which asyncio cannot wrap in a pipe transport."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data)
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()

    async def drain(self, timeout: float = 5.0) -> None:
        return None


def private_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own copies of stdin and stdout; fds 0 and 1 become /dev/null and stderr.

    Then neither a child process (a command the bash tool runs) nor a stray print()
    can read the client's messages or write into the protocol stream.
    """
    try:
        stdin_fd, stdout_fd, stderr_fd = (s.fileno() for s in (sys.stdin, sys.stdout, sys.stderr))
    except (AttributeError, ValueError, OSError):  # streams replaced, e.g. by a test runner
        return sys.stdin.buffer, sys.stdout.buffer
    protocol_in = os.fdopen(os.dup(stdin_fd), "rb")
    protocol_out = os.fdopen(os.dup(stdout_fd), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, stdin_fd)
    os.close(devnull)
    os.dup2(stderr_fd, stdout_fd)
    return protocol_in, protocol_out


class Endpoint(Receiver, Protocol):
    def set_writer(self, writer: Writer) -> None: ...


async def open_stdio(
    stdin: BinaryIO, stdout: BinaryIO, endpoint: Endpoint
) -> tuple[FrameReader, PipeWriter | BlockingWriter]:
    """Connect ``endpoint`` to the pipes: its writer first, so no answer finds none."""
    loop = asyncio.get_running_loop()
    writer: PipeWriter | BlockingWriter = BlockingWriter(stdout)
    if sys.platform != "win32":  # the proactor loop cannot wrap anonymous pipes
        try:
            transport, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout)
            writer = PipeWriter(transport)
        except ValueError:  # a regular file, which asyncio cannot wrap in a pipe transport
            pass
    endpoint.set_writer(writer)
    reader = FrameReader(endpoint)
    if _pollable(stdin):
        await loop.connect_read_pipe(lambda: reader, stdin)
    else:  # a file or /dev/null, which epoll refuses: read it in a worker thread
        asyncio.create_task(_pump(stdin, reader))  # noqa: RUF006 - ends at end of input
    return reader, writer


def _pollable(stream: BinaryIO) -> bool:
    if sys.platform == "win32":
        return False
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(stream.fileno())


async def _pump(stream: BinaryIO, reader: FrameReader) -> None:
    loop = asyncio.get_running_loop()
    read = getattr(stream, "read1", stream.read)
    while chunk := await loop.run_in_executor(None, read, CHUNK_BYTES):
        reader.data_received(chunk)
    reader.eof_received()
