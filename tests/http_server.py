"""A real HTTP server on 127.0.0.1 for tests that fetch over the network stack.

Each test registers routes (path -> handler function); the server records every
request it saw.  Every response closes its connection, so no keep-alive socket
outlives the test.  Nothing here ever listens on or connects to another address.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

CHUNK = 64 * 1024


@dataclass
class Seen:
    path: str
    headers: dict[str, str]  # lower-cased names
    method: str = "GET"
    query: str = ""
    body: bytes = b""


@dataclass
class Outcome:
    """What a streaming handler managed to send before it stopped."""

    sent: int = 0
    disconnected: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def finish(self, *, disconnected: bool) -> None:
        self.disconnected = disconnected
        self.done.set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._serve(b"")

    def do_POST(self) -> None:
        self._serve(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _serve(self, body: bytes) -> None:
        local = self.server.owner
        parts = urlsplit(self.path)
        path = parts.path
        headers = {k.lower(): v for k, v in self.headers.items()}
        local.seen.append(Seen(path, headers, self.command, parts.query, body))
        route = local.routes.get(path)
        self.close_connection = True
        try:
            if route is None:
                self.reply(404, b"not found")
            else:
                route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; the route recorded what it needed

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean

    def head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()

    def reply(
        self,
        status: int,
        body: bytes,
        content_type: str = "text/plain; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
        self.head(status, {**all_headers, **(headers or {})})
        self.wfile.write(body)

    def small_send_buffer(self) -> None:
        # Keeps the kernel from buffering megabytes, so "bytes sent" tracks "bytes read".
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)

    def stream(
        self,
        outcome: Outcome,
        chunks: Iterator[bytes],
        *,
        chunked: bool,
        pause: float = 0.0,
        stop: threading.Event | None = None,
    ) -> None:
        """Write ``chunks`` until they run out or the client disconnects."""
        try:
            for data in chunks:
                if stop is not None and stop.is_set():
                    break
                frame = b"%x\r\n%s\r\n" % (len(data), data) if chunked else data
                self.wfile.write(frame)
                self.wfile.flush()
                outcome.sent += len(data)
                if pause:
                    time.sleep(pause)
            else:
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            outcome.finish(disconnected=True)
            return
        outcome.finish(disconnected=False)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer


class LocalServer:
    def __init__(self) -> None:
        self.routes: dict[str, Callable[[Handler], None]] = {}
        self.seen: list[Seen] = []
        self.stopping = threading.Event()  # set at teardown: slow routes should end
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str) -> Callable[[Callable[[Handler], None]], Callable[[Handler], None]]:
        def register(fn: Callable[[Handler], None]) -> Callable[[Handler], None]:
            self.routes[path] = fn
            return fn

        return register

    def paths(self) -> list[str]:
        return [seen.path for seen in self.seen]

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
