"""Messages between the sidecar and its supervisor: length-prefixed JSON on a Unix
stream socket, with file descriptors (a command's stdin and output pipe) passed
alongside as SCM_RIGHTS. A frame says how many descriptors belong to it."""

from __future__ import annotations

import json
import socket
import struct
from collections import deque
from typing import Any

_HEADER = struct.Struct("!I")
MAX_FRAME = 64 * 1024 * 1024
MAX_FDS = 8


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send one whole frame (blocking); its descriptors go with its first byte."""
    body = json.dumps({**message, "nfds": len(fds or ())}, ensure_ascii=False).encode()
    frame = _HEADER.pack(len(body)) + body
    sent = 0
    if fds:
        sent = socket.send_fds(sock, [frame], fds)
    view = memoryview(frame)[sent:]
    if view:
        sock.sendall(view)


class Reader:
    """Reassembles frames from whatever ``recvmsg`` returns."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.fds: deque[int] = deque()
        self.closed = False

    def read(self) -> list[tuple[dict[str, Any], list[int]]]:
        """The frames now complete (an empty list at the end: ``closed`` is set)."""
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, MAX_FDS)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data, fds = b"", []
        for fd in fds:
            _no_inherit(fd)
        self.fds.extend(fds)
        if not data:
            self.closed = True
            return []
        self.buffer += data
        return self._frames()

    def _frames(self) -> list[tuple[dict[str, Any], list[int]]]:
        frames = []
        while len(self.buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self.buffer)
            if length > MAX_FRAME:
                raise ValueError(f"a frame of {length} bytes is too large")
            end = _HEADER.size + length
            if len(self.buffer) < end:
                break
            message = json.loads(bytes(self.buffer[_HEADER.size : end]))
            del self.buffer[:end]
            count = int(message.pop("nfds", 0))
            fds = [self.fds.popleft() for _ in range(min(count, len(self.fds)))]
            frames.append((message, fds))
        return frames


def _no_inherit(fd: int) -> None:
    import os

    os.set_inheritable(fd, False)
