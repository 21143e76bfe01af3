"""LSP base framing, read with asyncio, and the stdio transport.

pygls reads stdin through a thread pool, one executor hop per header line.  Here
stdin is an asyncio pipe (``loop.connect_read_pipe``) and stdout an asyncio write
transport, so a request costs no thread switch.  ``FrameReader`` cuts the byte
stream into bodies.  Headers are read strictly (only LSP's ``Content-Length`` and
``Content-Type``, each at most once, in at most 8 KiB); a framing fault is answered
through ``Receiver.framing_error`` and the reader resynchronises on the next
well-formed header, so one bad frame never ends the session.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from typing import BinaryIO, Protocol

HEADER_END = b"\r\n\r\n"
MAX_HEADER_BYTES = 8 * 1024
MAX_BODY_BYTES = 512 * 1024 * 1024
CHUNK_BYTES = 64 * 1024

# LSP's base protocol has exactly these header fields.
LSP_HEADERS = frozenset({b"content-length", b"content-type"})
# One "Name: value" line; the name is an RFC 9110 token.
_FIELD = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*([^\r\n]*)")
_LSP_NAME = re.compile(rb"content-(?:length|type)[ \t]*:", re.IGNORECASE)
# The header nearly every message has: one regex match instead of the strict parse.
_PLAIN_HEADER = re.compile(rb"Content-Length: ([0-9]{1,9})\r\n\r\n")

Fields = dict[bytes, bytes]  # lower-cased header name -> value


class Receiver(Protocol):
    def receive(self, body: bytes) -> None: ...

    def framing_error(self, message: str) -> None: ...


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


def read_fields(block: bytes, names: frozenset[bytes] = LSP_HEADERS) -> tuple[Fields, str | None]:
    """A header block's fields, strictly: every line ``Name: value``, each name one of
    ``names`` and given once, and exactly one ``Content-Length``.  ``(fields, problem)``."""
    fields: Fields = {}
    lines = block.removesuffix(HEADER_END).split(b"\r\n")
    for line in lines:
        match = _FIELD.fullmatch(line)
        if match is None:
            return fields, f"a header line must be `Name: value`, got {line[:40]!r}"
        name = match.group(1).lower()
        if name not in names:
            shown = match.group(1)[:40].decode("ascii", "replace")
            allowed = ", ".join(n.decode().title() for n in sorted(names))
            return fields, f"{shown} is not a header of this protocol (only {allowed})"
        if name in fields:
            return fields, f"the {match.group(1).decode()} header appears more than once"
        fields[name] = match.group(2).strip()
    if b"content-length" not in fields:
        return fields, "the message header has no Content-Length"
    return fields, None


def content_length(fields: Fields) -> tuple[int | None, str | None]:
    value = fields[b"content-length"]
    if not value.isdigit() or not value.isascii():
        return None, f"Content-Length must be a number of bytes, got {value[:40]!r}"
    length = int(value)
    if length > MAX_BODY_BYTES:
        return None, f"Content-Length {length} exceeds the {MAX_BODY_BYTES}-byte limit"
    return length, None


def parse_header(
    block: bytes, names: frozenset[bytes] = LSP_HEADERS, *, resync: bool = True
) -> tuple[int | None, str | None, bool]:
    """``(length, problem, skipped_garbage)`` for one header block ending in CRLF CRLF.

    The block must be exactly LSP's header fields (``read_fields``).  With ``resync``,
    bytes glued in front of the first field on its line (the rest of a broken frame)
    are skipped: parsing restarts where ``Content-Length`` or ``Content-Type`` begins
    mid-line, so a broken frame costs one message, not every one after it.  A whole
    line that is not a header never resyncs: a duplicate ``Content-Length`` or an
    HTTP request line is a fault, not garbage to skip.
    """
    plain = _PLAIN_HEADER.fullmatch(block)  # what nearly every client sends
    if plain is not None and int(plain.group(1)) <= MAX_BODY_BYTES:
        return int(plain.group(1)), None, False
    length, problem = _strict_length(block, names)
    if problem is None or not resync:
        return length, problem, False
    for found in _LSP_NAME.finditer(block, 1):
        start = found.start()
        if block[start - 1 : start] == b"\n":
            continue  # a line of its own: the block itself is wrong
        length, again = _strict_length(block[start:], names)
        if again is None:
            return length, None, True
    return None, problem, False


def _strict_length(block: bytes, names: frozenset[bytes]) -> tuple[int | None, str | None]:
    fields, problem = read_fields(block, names)
    return (None, problem) if problem is not None else content_length(fields)


class StreamEnd(asyncio.Protocol):
    """An incoming stream whose end is awaitable: ``closed`` resolves when it ends."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        self._close()

    def _close(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class FrameReader(StreamEnd):
    """Cuts the incoming byte stream into bodies as data arrives.

    Parsing inside ``data_received`` (rather than in a reader task) saves an event
    loop round per message.  ``closed`` resolves when the stream ends.
    """

    def __init__(self, sink: Receiver) -> None:
        super().__init__()
        self.sink = sink
        self.length: int | None = None  # the body length, once its header is read
        self.resyncing = False  # after a reported fault, skipped bytes are not re-reported

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (body := self._next_body()) is not None:
            self.deliver(body)

    def deliver(self, body: bytes) -> None:
        self.sink.receive(body)

    def eof_received(self) -> bool:
        if (self.buffer.strip() or self.length is not None) and not self.resyncing:
            self.sink.framing_error("the stream ended inside a message")
        self.buffer.clear()
        self._close()
        return False

    def header(self, block: bytes) -> tuple[int | None, str | None, bool]:
        """Parse one header block (a subclass may accept more, or less)."""
        return parse_header(block)

    def _next_body(self) -> bytes | None:
        buffer = self.buffer
        while self.length is None:
            end = buffer.find(HEADER_END, 0, MAX_HEADER_BYTES + len(HEADER_END))
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    self._fault(f"no end of message header within {MAX_HEADER_BYTES} bytes")
                    del buffer[: -len(HEADER_END)]
                return None
            block = bytes(buffer[: end + len(HEADER_END)])
            del buffer[: end + len(HEADER_END)]
            length, problem, garbage = self.header(block)
            if problem is not None:
                # A block with no length in it right after a fault is that fault's debris.
                debris = self.resyncing and b"content-length" not in block.lower()
                if not debris:
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
    writer = await open_writer(stdout)
    endpoint.set_writer(writer)
    reader = FrameReader(endpoint)
    await read_into(stdin, reader)
    return reader, writer


async def open_writer(stdout: BinaryIO) -> PipeWriter | BlockingWriter:
    """Non-blocking writes to ``stdout`` where asyncio can wrap it, blocking ones otherwise."""
    if sys.platform != "win32":  # the proactor loop cannot wrap anonymous pipes
        try:
            transport, _ = await asyncio.get_running_loop().connect_write_pipe(
                asyncio.Protocol, stdout
            )
            return PipeWriter(transport)
        except ValueError:  # a regular file, which asyncio cannot wrap in a pipe transport
            pass
    return BlockingWriter(stdout)


async def read_into(stdin: BinaryIO, reader: asyncio.Protocol) -> None:
    """Feed ``stdin`` to ``reader`` as it arrives (``data_received``, then ``eof_received``)."""
    if _pollable(stdin):
        await asyncio.get_running_loop().connect_read_pipe(lambda: reader, stdin)
    else:  # a file or /dev/null, which epoll refuses: read it in a worker thread
        asyncio.create_task(_pump(stdin, reader))  # noqa: RUF006 - ends at end of input


def _pollable(stream: BinaryIO) -> bool:
    if sys.platform == "win32":
        return False
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(stream.fileno())


async def _pump(stream: BinaryIO, reader: asyncio.Protocol) -> None:
    loop = asyncio.get_running_loop()
    read = getattr(stream, "read1", stream.read)
    while chunk := await loop.run_in_executor(None, read, CHUNK_BYTES):
        reader.data_received(chunk)
    reader.eof_received()
