"""Base framing, fed in awkward pieces (pure: no process)."""

from __future__ import annotations

import pytest

from server.stdio import FrameReader, parse_header


class Sink:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.faults: list[str] = []

    def receive(self, body: bytes) -> None:
        self.bodies.append(body)

    def framing_error(self, message: str) -> None:
        self.faults.append(message)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


@pytest.fixture
async def reader() -> FrameReader:
    return FrameReader(Sink())


def fed(reader: FrameReader, *chunks: bytes) -> Sink:
    for chunk in chunks:
        reader.data_received(chunk)
    return reader.sink  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (b"Content-Length: 12\r\n\r\n", (12, None, False)),
        (b"content-length:7\r\n\r\n", (7, None, False)),
        (b"Content-Type: x\r\nContent-Length: 3\r\n\r\n", (3, None, False)),
        (b'{"stray": 1}Content-Length: 3\r\n\r\n', (3, None, True)),
    ],
)
def test_parse_header(block: bytes, expected: tuple) -> None:
    assert parse_header(block) == expected


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (b"Content-Type: x\r\n\r\n", "no Content-Length"),
        (b"Content-Length: -1\r\n\r\n", "must be a number"),
        (b"Content-Length: 1e3\r\n\r\n", "must be a number"),
        (b"Content-Length: 99999999999\r\n\r\n", "exceeds"),
        (b"Content-Length: 999999999\r\n\r\n", "exceeds"),  # the common shape, too long
        # Strict: exactly one Content-Length, only LSP's header names, whole lines.
        (b"Content-Length: 3\r\nContent-Length: 9\r\n\r\n", "more than once"),
        (b"Content-Length: 3\r\nX-Extra: 1\r\n\r\n", "not a header of this protocol"),
        (b"Authorization: Bearer x\r\nContent-Length: 3\r\n\r\n", "not a header"),
        (b"Content-Length: \xd9\xa3\r\n\r\n", "must be a number"),  # Arabic-Indic 3
        (
            b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\n\r\n",
            "must be `Name: value`",
        ),
    ],
)
def test_parse_header_problems(block: bytes, problem: str) -> None:
    length, message, _ = parse_header(block)
    assert length is None and message is not None and problem in message


async def test_byte_by_byte_and_many_per_chunk(reader: FrameReader) -> None:
    stream = frame(b'{"a":1}') + frame(b"[]") + frame(b'"\xc3\xa9"')
    sink = fed(reader, *(stream[i : i + 1] for i in range(len(stream))))
    assert sink.bodies == [b'{"a":1}', b"[]", b'"\xc3\xa9"']
    sink = fed(FrameReader(Sink()), stream)
    assert sink.bodies == [b'{"a":1}', b"[]", b'"\xc3\xa9"'] and sink.faults == []


async def test_a_frame_without_length_is_reported_once_then_skipped(reader: FrameReader) -> None:
    sink = fed(reader, b"Content-Type: x\r\n\r\n{}\r\n\r\nmore\r\n\r\n" + frame(b"{}"))
    assert sink.bodies == [b"{}"]
    assert len(sink.faults) == 1 and "Content-Length" in sink.faults[0]


async def test_garbage_before_a_header_is_reported_and_skipped(reader: FrameReader) -> None:
    sink = fed(reader, b"hello there " + frame(b"1"))
    assert sink.bodies == [b"1"]
    assert sink.faults == ["skipped bytes that were not a message header"]


async def test_http_shaped_input_is_never_framed_as_a_message() -> None:
    """The last Content-Length of an HTTP request used to be taken as the frame's."""
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    sink = fed(FrameReader(Sink()), request, frame(b"ok"))
    assert sink.bodies == [b"ok"]
    assert "must be `Name: value`" in sink.faults[0]


async def test_a_header_that_never_ends_is_dropped(reader: FrameReader) -> None:
    sink = fed(reader, b"x" * 70_000, frame(b"2"))
    assert sink.bodies == [b"2"]
    assert len(sink.faults) == 1 and "no end of message header" in sink.faults[0]


@pytest.mark.parametrize("tail", [b"Content-Length: 10\r\n\r\n{", b"Content-Length: 10\r\n\r\n"])
async def test_end_of_stream_inside_a_message(reader: FrameReader, tail: bytes) -> None:
    sink = fed(reader, tail)
    reader.eof_received()
    assert sink.faults == ["the stream ended inside a message"]
    assert reader.closed.done()
