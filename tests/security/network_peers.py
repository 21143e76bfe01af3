"""The far ends the network-by-domain tests reach (or must not): servers on this machine's
loopback that record every byte that arrives.

There is no internet here, and loopback is a private range: the tests name these servers
with ``.test`` names that ``TOOLHOST_NETWORK_HOSTS`` (read by the sidecar's proxy only)
maps to 127.0.0.1 or ::1, and list the address with its port literally where it should be
reached (an address a name resolves to must be listed literally to be private and
reachable: ``tools.network.addresses``).
"""

from __future__ import annotations

import io
import socket
import ssl
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WHEEL_NAME = "tiny-1.0-py3-none-any.whl"


def tiny_wheel() -> bytes:
    """A valid wheel of an empty package ``tiny`` 1.0 (what ``pip download`` fetches)."""
    files = {
        "tiny/__init__.py": "",
        "tiny-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
        "tiny-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: toolhost-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "tiny-1.0.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in {**files, "tiny-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@dataclass
class Hit:
    host: str  # the Host header it was asked with
    path: str


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        hits = self.server.web.hits
        hits.append(Hit(self.headers.get("Host", ""), self.path))
        if self.path == "/simple/tiny/":
            body = f'<a href="/files/{WHEEL_NAME}">{WHEEL_NAME}</a>'.encode()
            kind = "text/html"
        elif self.path == f"/files/{WHEEL_NAME}":
            body, kind = self.server.web.wheel, "application/octet-stream"
        elif self.path.startswith("/big/"):
            body, kind = self.server.web.big, "application/octet-stream"
        else:
            body, kind = (
                f"hello from {self.headers.get('Host')} {self.path}\n".encode(),
                "text/plain",
            )
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    web: Web


class _Server6(_Server):
    address_family = socket.AF_INET6


@dataclass
class Web:
    """An HTTP server that answers every GET with where it was asked, and serves a wheel."""

    host: str = "127.0.0.1"
    tls: Path | None = None  # a PEM file with the key and a certificate: serve HTTPS
    hits: list[Hit] = field(default_factory=list)
    wheel: bytes = field(default_factory=tiny_wheel)
    big: bytes = b""
    port: int = 0

    @contextmanager
    def running(self) -> Iterator[Web]:
        kind = _Server6 if ":" in self.host else _Server
        server = kind((self.host, 0), _Handler)
        server.web = self
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()

    def paths(self) -> list[str]:
        return [hit.path for hit in self.hits]


def self_signed(folder: Path, name: str) -> Path:
    """A key and a self-signed certificate for ``name``, in one PEM file (openssl)."""
    pem = folder / f"{name}.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"),
            *("-keyout", str(pem), "-out", str(folder / "cert.pem")),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    pem.write_text(pem.read_text() + (folder / "cert.pem").read_text())
    return pem


@dataclass
class Sink:
    """A TCP (or UDP) listener that answers nothing and keeps every byte it gets."""

    udp: bool = False
    host: str = "127.0.0.1"  # "0.0.0.0": also on this machine's other addresses
    received: bytearray = field(default_factory=bytearray)
    port: int = 0

    @contextmanager
    def running(self) -> Iterator[Sink]:
        kind = socket.SOCK_DGRAM if self.udp else socket.SOCK_STREAM
        listener = socket.socket(socket.AF_INET, kind)
        listener.bind((self.host, 0))
        self.port = listener.getsockname()[1]
        if not self.udp:
            listener.listen(16)
        listener.settimeout(0.2)
        stop = threading.Event()
        thread = threading.Thread(target=self._serve, args=(listener, stop), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=5)
            listener.close()

    def _serve(self, listener: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if self.udp:
                    self.received += listener.recv(65536)
                    continue
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._read, args=(conn, stop), daemon=True).start()

    def _read(self, conn: socket.socket, stop: threading.Event) -> None:
        conn.settimeout(0.2)
        with conn:
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                self.received += data
