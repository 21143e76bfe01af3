"""A Unix socket of this user's, listening outside the project when a command starts,
is out of the command's reach, whoever serves it: ssh-agent, gpg-agent, a terminal's
or an IDE's remote control, not only the sockets ``DEFAULT_HIDDEN`` names.

With the defence off (``listening_sockets`` finds nothing, as before) the command
connects and the listener hears it; with it on, the socket is covered in the
command's mount namespace.  A socket in the project (a server the command's own
earlier job runs) stays reachable, and so does another user's service.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.test_sandbox import bash, make_host
from tools.bash.sandbox import landlock
from tools.bash.sandbox import settings as sandbox_settings
from tools.config.effective import SandboxSettings

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)

SEND = (
    'python3 -c "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); '
    "s.sendall(b'sign this')\" {path}"
)


class Listener:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.heard: list[bytes] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                self.heard.append(conn.recv(100))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def agent() -> Iterator[Listener]:
    """An ssh-agent's socket, where ssh-agent puts it."""
    folder = Path("/tmp") / f"ssh-{uuid.uuid4().hex[:10]}"
    folder.mkdir(mode=0o700)
    listener = Listener(folder / "agent.1")
    try:
        yield listener
    finally:
        listener.close()
        folder.rmdir()


def heard(listener: Listener) -> list[bytes]:
    for _ in range(25):
        if listener.heard:
            break
        threading.Event().wait(0.02)
    return listener.heard


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_socket_of_this_user_outside_is_hidden(
    worktree: Path, agent: Listener, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setattr(sandbox_settings, "listening_sockets", lambda writable: [])
    result = await bash(make_host(worktree), SEND.format(path=agent.path))
    if defence == "off":
        assert heard(agent) == [b"sign this"], result.output  # the attack works
    else:
        assert heard(agent) == [], result.output
        assert "Connection refused" in result.output


async def test_a_socket_in_the_project_stays_reachable(worktree: Path) -> None:
    server = Listener(worktree / "dev.sock")
    try:
        result = await bash(make_host(worktree), SEND.format(path="dev.sock"))
        assert heard(server) == [b"sign this"], result.output
    finally:
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's socket needs root")
async def test_another_users_service_is_not_hidden(worktree: Path, tmp_path: Path) -> None:
    service = Listener(tmp_path / "db.sock")  # as PostgreSQL's: anyone may connect
    os.chown(service.path, 65534, 65534)
    service.path.chmod(0o777)
    try:
        assert str(service.path) not in sandbox_settings.listening_sockets([str(worktree)])
        result = await bash(make_host(worktree), SEND.format(path=service.path))
        assert heard(service) == [b"sign this"], result.output
    finally:
        service.close()


async def test_an_explicit_hidden_list_replaces_the_sweep(worktree: Path, agent: Listener) -> None:
    host = make_host(worktree, SandboxSettings(hidden=()))
    result = await bash(host, SEND.format(path=agent.path))
    assert heard(agent) == [b"sign this"], result.output
