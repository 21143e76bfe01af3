"""The proxy's sockets: reading a request's head on the event loop, connecting to a checked
address, and copying the bytes that follow in threads, kernel to kernel.

The proxy connects to the addresses the gate returned, never to a name: nothing is
resolved a second time between the check and the connection (DNS rebinding).

Once a tunnel is open (or a plain request forwarded), the bytes are copied by two
threads with ``splice(2)`` through a pipe: they never enter Python, and the sidecar's
event loop, which answers the editor, is not the one copying a download. Each thread
ends when its side reaches the end, or when the other side or the proxy's ``close``
shuts the sockets down; the last one to end closes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Callable, Sequence

from tools.network.patterns import IPAddress

CONNECT_SECONDS = 15.0
CHUNK = 256 * 1024
PIPE_SIZE = 1024 * 1024
_F_SETPIPE_SZ = 1031

# Looks at the first bytes a client sends through a tunnel: why to end it, or None.
Inspect = Callable[[bytes], str | None]


class ConnectFailed(OSError):
    """No address could be connected to: what each one said."""


class Conn:
    """A non-blocking socket read through the event loop, with bytes read ahead kept."""

    def __init__(self, sock: socket.socket, initial: bytes = b"") -> None:
        sock.setblocking(False)
        with contextlib.suppress(OSError):  # not a TCP socket (tests): no matter
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.buffer = bytearray(initial)
        self.handed_over = False

    async def read(self, size: int = CHUNK) -> bytes:
        """What is there (up to ``size``); b"" at the end."""
        if self.buffer:
            data = bytes(self.buffer[:size])
            del self.buffer[:size]
            return data
        return await asyncio.get_running_loop().sock_recv(self.sock, size)

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            data = await asyncio.get_running_loop().sock_recv(self.sock, CHUNK)
            if not data:
                raise asyncio.IncompleteReadError(bytes(self.buffer), size)
            self.buffer += data
        return await self.read(size)

    def take(self) -> bytes:
        """The bytes read ahead and not used yet."""
        data = bytes(self.buffer)
        self.buffer.clear()
        return data

    async def write(self, data: bytes) -> None:
        if data:
            await asyncio.get_running_loop().sock_sendall(self.sock, data)

    def close(self) -> None:
        if not self.handed_over:  # else the copying threads close it when they end
            self.sock.close()


async def connect(addresses: Sequence[IPAddress], port: int) -> Conn:
    """A connection to the first of ``addresses`` that answers."""
    loop = asyncio.get_running_loop()
    failures: list[str] = []
    for address in addresses:
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                await loop.sock_connect(sock, (str(address), port))
            return Conn(sock)
        except TimeoutError:
            failures.append(f"{address}: no answer within {CONNECT_SECONDS:g} s")
        except OSError as error:
            failures.append(f"{address}: {error.strerror or error}")
        except BaseException:
            sock.close()
            raise
        sock.close()
    raise ConnectFailed("; ".join(failures) or "no address")


async def relay(
    client: Conn, upstream: Conn, *, first: bytes = b"", inspect: Inspect | None = None
) -> str | None:
    """Copy client → upstream (``first`` and what the client sent ahead, then the rest)
    and upstream → client until the far end is done; then close both. Why ``inspect``
    ended it, or None."""
    ahead, back = first + client.take(), upstream.take()
    copy = _Copy(client.sock, upstream.sock)
    client.handed_over = upstream.handed_over = True
    outbound = _in_thread(copy.run, copy.outbound, ahead, inspect)
    inbound = _in_thread(copy.run, copy.inbound, back, None)
    try:
        await asyncio.wait([inbound, outbound], return_when=asyncio.FIRST_COMPLETED)
        if copy.refused is None:
            await inbound  # the client may have half-closed: the far end still answers
    finally:
        copy.stop()  # unblocks what is still copying; the last thread out closes both
    return copy.refused


async def send_back(
    upstream: Conn, client: Conn, head: Callable[[bytes], bytes], limit: int
) -> None:
    """Copy upstream → client to its end (a forwarded request's answer), its head (up to
    the first empty line, at most ``limit`` bytes) passed through ``head`` first; then
    close both. All of it in the copying thread: the answer waits on no event loop."""
    back = upstream.take()
    copy = _Copy(client.sock, upstream.sock, threads=1)
    client.handed_over = upstream.handed_over = True

    def answer(first: bytes, _: Inspect | None) -> bool:
        data = bytearray(first)
        while (end := data.find(b"\r\n\r\n")) < 0 and len(data) < limit:
            more = copy.upstream.recv(CHUNK)
            if not more:
                break
            data += more
        cut = end + 4 if end >= 0 else len(data)
        copy.client.sendall(head(bytes(data[:cut])) + bytes(data[cut:]))
        return copy.inbound(b"", None)

    try:
        await _in_thread(copy.run, answer, back, None)
    finally:
        copy.stop()


def _in_thread(function: Callable[..., None], *args: object) -> asyncio.Future[None]:
    """Run ``function`` in a thread of its own (a tunnel may stay open as long as its
    command runs: the event loop's few shared workers must not wait on it)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def target() -> None:
        try:
            function(*args)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle)

    threading.Thread(target=target, name="toolhost-proxy-copy", daemon=True).start()
    return done


class _Copy:
    """Two sockets copied between by threads; the last thread to end closes them.

    The client's end (it half-closed) leaves the far end's answer to come; the far
    end's end, a reset or a refusal ends both ways."""

    def __init__(self, client: socket.socket, upstream: socket.socket, threads: int = 2) -> None:
        self.client, self.upstream = client, upstream
        self.refused: str | None = None
        self.lock = threading.Lock()
        self.pending = threads
        for sock in (client, upstream):
            sock.setblocking(True)

    def outbound(self, first: bytes, inspect: Inspect | None) -> bool:
        if inspect is not None:
            data = first or self.client.recv(CHUNK)
            why = inspect(data) if data else None
            if why is not None:
                self.refused = why
                return True
            first = data
        if first:
            self.upstream.sendall(first)
        _pump(self.client, self.upstream)
        return False  # a half-close: the other way goes on

    def inbound(self, first: bytes, _: Inspect | None) -> bool:
        if first:
            self.client.sendall(first)
        _pump(self.upstream, self.client)
        return True

    def run(
        self, copy: Callable[[bytes, Inspect | None], bool], first: bytes, inspect: Inspect | None
    ) -> None:
        ends_both = True
        try:
            ends_both = copy(first, inspect)
        except OSError:
            pass  # a reset, or the sockets were shut down: this way is over
        finally:
            if ends_both:
                self.stop()
            with self.lock:
                self.pending -= 1
                last = self.pending == 0
            if last:
                self.client.close()
                self.upstream.close()

    def stop(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _pump(source: socket.socket, target: socket.socket) -> None:
    """``source`` to ``target`` until the end, through a pipe with ``splice`` (or, where
    that is refused, through a buffer); then half-close ``target``."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_end, _F_SETPIPE_SZ, PIPE_SIZE)
        try:
            _splice(source.fileno(), target.fileno(), read_end, write_end)
        except OSError as error:
            if error.errno not in (22, 95):  # EINVAL, EOPNOTSUPP: no splice for these
                raise
            while data := source.recv(CHUNK):
                target.sendall(data)
    finally:
        os.close(read_end)
        os.close(write_end)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def _splice(source: int, target: int, read_end: int, write_end: int) -> None:
    while True:
        moved = os.splice(source, write_end, PIPE_SIZE, flags=os.SPLICE_F_MOVE)
        if moved == 0:
            return
        while moved:
            moved -= os.splice(read_end, target, moved, flags=os.SPLICE_F_MOVE)
