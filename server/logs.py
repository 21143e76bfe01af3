"""Logging: stderr always, and ``window/logMessage`` once a client is connected.

stdout carries the protocol, so nothing is logged there; and nothing is shown as
``window/showMessage`` from here (the client decides what to surface).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from server.sidecar import ToolhostServer

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    logging.getLogger("toolhost").setLevel(level.upper())
    # pygls logs every message body at INFO: only its warnings are worth a line.
    logging.getLogger("pygls").setLevel(logging.WARNING if level != "debug" else logging.DEBUG)


def _message_type(level: int) -> types.MessageType:
    if level >= logging.ERROR:
        return types.MessageType.Error
    if level >= logging.WARNING:
        return types.MessageType.Warning
    if level >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    """Sends records as ``window/logMessage`` (from any thread, never recursively)."""

    def __init__(self, server: ToolhostServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.server = server
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._sending = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.server.initialize_params is None or self.server.protocol.writer is None:
            return
        try:  # plain JSON: see ToolhostProtocol.notify
            params = {"type": _message_type(record.levelno).value, "message": self.format(record)}
        except Exception:
            self.handleError(record)
            return
        if threading.get_ident() == self.loop_thread:
            self._send(params)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._send, params)

    def _send(self, params: dict[str, Any]) -> None:
        if self._sending:  # a failure to send is itself logged: do not loop
            return
        self._sending = True
        try:
            self.server.protocol.notify(types.WINDOW_LOG_MESSAGE, params)
        finally:
            self._sending = False


def forward_to_client(server: ToolhostServer, loop: asyncio.AbstractEventLoop) -> ClientLogHandler:
    handler = ClientLogHandler(server, loop)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    return handler
