"""The MCP handover socket (``server/attach/adopt.py``) gives a client's pipes to the
sidecar only from the peer that knows the nonce, which the sidecar handed over the
token-checked attach connection. Whoever sends the right nonce gets served (the attack,
when the nonce is known); a wrong one is refused and its descriptors are closed."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

from server.attach.adopt import listen_once, receive_pipes


def hand(path: Path, nonce: str, fds: list[int]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(str(path))
        socket.send_fds(connection, [nonce.encode()], fds)


def attempt(tmp_path: Path, sent: str) -> tuple[tuple[int, int] | None, Path]:
    path = tmp_path / "handover.sock"
    listening = listen_once(path)
    result: list[tuple[int, int] | None] = []
    receiving = threading.Thread(
        target=lambda: result.append(receive_pipes(listening, path, "right"))
    )
    receiving.start()
    read_end, write_end = os.pipe()
    try:
        hand(path, sent, [read_end, write_end])
    finally:
        os.close(read_end)
        os.close(write_end)
    receiving.join(10)
    return result[0], path


def test_the_peer_with_the_nonce_gets_its_pipes_served(tmp_path: Path) -> None:
    fds, path = attempt(tmp_path, "right")
    assert fds is not None  # the attack works for whoever knows the nonce
    os.write(fds[1], b"x")
    assert os.read(fds[0], 1) == b"x"  # they are the sender's pipe
    for fd in fds:
        os.close(fd)
    assert not path.exists()  # one connection, then the socket is gone


def test_a_wrong_nonce_is_refused_and_its_descriptors_closed(tmp_path: Path) -> None:
    before = set(os.listdir("/proc/self/fd"))
    fds, path = attempt(tmp_path, "guessed")
    assert fds is None
    assert set(os.listdir("/proc/self/fd")) <= before  # nothing received was kept open
    assert not path.exists()


def test_the_socket_is_private(tmp_path: Path) -> None:
    path = tmp_path / "handover.sock"
    listening = listen_once(path)
    try:
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    finally:
        listening.close()
