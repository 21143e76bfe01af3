"""ACP's transport: newline-delimited JSON-RPC 2.0 over a pair of asyncio streams.

A proxy relays most messages untouched, so a ``LinePeer`` hands every message it
does not own to its ``on_message`` as the raw dict.  What it owns are the answers to
its own requests, whose ids are strings starting ``toolhost-``: the two ends' ids
are passed through unchanged, and an agent or a client numbers its own requests, so
ours never collide with theirs.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger("toolhost.acp")

OWN_PREFIX = "toolhost-"
LINE_LIMIT = 256 * 1024 * 1024  # a file's whole text can travel in one message
METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32601, -32602, -32603

Message = dict[str, Any]


class AcpError(Exception):
    """An error answer, ours to send or the other end's to us."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def is_request(message: Message) -> bool:
    return isinstance(message.get("method"), str) and "id" in message


def is_notification(message: Message) -> bool:
    return isinstance(message.get("method"), str) and "id" not in message


class LinePeer:
    """One end of an ACP connection."""

    def __init__(
        self,
        name: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter | asyncio.WriteTransport,
        on_message: Callable[[Message], None],
    ) -> None:
        self.name = name
        self.reader = reader
        self.writer = writer
        self.on_message = on_message
        self.sent: list[Message] = []  # every message we wrote, for the schema tests' log
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self.closed = asyncio.get_running_loop().create_future()
        self.log_path = os.environ.get("TOOLHOST_ACP_SENT_LOG")

    # -- writing ---------------------------------------------------------------

    def send(self, message: Message, answers: str | None = None, relayed: bool = False) -> None:
        """Write ``message``; ``answers``: the method of the request it answers, if known;
        ``relayed``: the other end's message passed on unchanged (its words, not ours)."""
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        if self.log_path:  # the tests validate everything we send against the schema
            record = {"to": self.name, "message": message, "answers": answers, "relayed": relayed}
            with open(self.log_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        try:
            self.writer.write(line.encode())
        except (ConnectionError, RuntimeError) as error:
            log.info("could not write to the %s: %s", self.name, error)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, msg_id: Any, result: Any, method: str | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result}, method)

    def fail(self, msg_id: Any, error: AcpError, method: str | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()}, method)

    async def request(self, method: str, params: Any) -> Any:
        if self.closed.done():
            raise AcpError(INTERNAL_ERROR, f"the {self.name} has closed the connection")
        msg_id = f"{OWN_PREFIX}{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        finally:
            self._waiting.pop(msg_id, None)

    # -- reading ---------------------------------------------------------------

    async def run(self) -> None:
        """Read until the other end closes; then fail whatever still waits for it."""
        try:
            while True:
                try:
                    line = await self.reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    log.warning("the %s sent a line over %d bytes; dropped", self.name, LINE_LIMIT)
                    continue
                if not line:
                    break
                if line.strip():
                    self._receive(line)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(
                        AcpError(INTERNAL_ERROR, f"the {self.name} closed the connection")
                    )
            if not self.closed.done():
                self.closed.set_result(None)

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("the %s sent a line that is not JSON: %.200r", self.name, line)
            return
        if not isinstance(message, dict):
            log.warning("the %s sent JSON that is not an object: %.200r", self.name, line)
            return
        msg_id = message.get("id")
        if "method" not in message and isinstance(msg_id, str) and msg_id in self._waiting:
            future = self._waiting[msg_id]
            if not future.done():
                error = message.get("error")
                if isinstance(error, dict):
                    future.set_exception(
                        AcpError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message")))
                    )
                else:
                    future.set_result(message.get("result"))
            return
        self.on_message(message)


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.WriteTransport]:
    """This process's stdin as a reader and stdout as a write transport."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, _ = await loop.connect_write_pipe(
        asyncio.Protocol, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    )
    return reader, transport
