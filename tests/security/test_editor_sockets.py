"""An editor's socket is out of bash's reach wherever the editor put it.

The attack: with no ``$XDG_RUNTIME_DIR``, Neovim listens on
``/tmp/nvim.$USER/…/nvim.PID.0``, and a command asks it (``nvim --server …
--remote-expr``) to write a file outside the project: the editor does it, outside
every sandbox.  VS Code's ``/tmp/vscode-ipc-*.sock`` and ``/tmp/vscode-git-*.sock``
take commands the same way.  With the defence off (the sockets of the old list
only) the marker is written or the socket answers; with it on, the sockets are
hidden in the command's mount namespace.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.test_sandbox import bash, make_host
from tools.bash.sandbox import landlock
from tools.bash.sandbox import settings as sandbox_settings

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)

NVIM = shutil.which("nvim") or str(Path(__file__).parents[2] / ".venv" / "bin" / "nvim")
OLD_HIDDEN = tuple(p for p in sandbox_settings.DEFAULT_HIDDEN if not p.startswith("{tmp}"))


def old_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only $XDG_RUNTIME_DIR's editor sockets are hidden, as before (and no listening
    socket is hidden for being this user's: ``listening_sockets``)."""
    monkeypatch.setattr(sandbox_settings, "DEFAULT_HIDDEN", OLD_HIDDEN)
    monkeypatch.setattr(sandbox_settings, "listening_sockets", lambda writable: [])


@pytest.fixture
def neovim(tmp_path: Path) -> Iterator[str]:
    """A headless Neovim started with no XDG_RUNTIME_DIR: its server address."""
    if not os.access(NVIM, os.X_OK):
        pytest.skip("Neovim is not installed")
    address = tmp_path / "address"
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NVIM")}
    env["TMPDIR"] = "/tmp"
    write = f"call writefile([v:servername], '{address}')"
    proc = subprocess.Popen(
        [NVIM, "--headless", "--clean", "--cmd", write], env=env, stdin=subprocess.DEVNULL
    )
    try:
        for _ in range(200):
            if address.exists() and address.read_text().strip():
                break
            assert proc.poll() is None, "Neovim ended before it listened"
            threading.Event().wait(0.05)
        server = address.read_text().strip()
        assert server.startswith("/tmp/nvim."), server
        yield server
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_neovim_outside_the_runtime_dir_cannot_be_asked_to_write(
    worktree: Path, tmp_path: Path, neovim: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        old_list(monkeypatch)
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    expr = f"writefile(['pwned'], '{marker}')"
    result = await bash(make_host(worktree), f'{NVIM} --server {neovim} --remote-expr "{expr}"')
    if defence == "off":
        assert marker.exists(), result.output  # the attack works: the editor wrote it
    else:
        assert not marker.exists(), result.output


@pytest.fixture
def vscode_sockets() -> Iterator[tuple[list[Path], list[bytes]]]:
    """Listeners where VS Code puts its sockets, recording what each client sends."""
    tag = uuid.uuid4().hex[:8]
    paths = [Path("/tmp") / f"vscode-{kind}-{tag}.sock" for kind in ("ipc", "git")]
    heard: list[bytes] = []
    servers = []
    for path in paths:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        servers.append(server)
        threading.Thread(target=_serve, args=(server, heard), daemon=True).start()
    try:
        yield paths, heard
    finally:
        for server, path in zip(servers, paths, strict=True):
            server.close()
            path.unlink(missing_ok=True)


def _serve(server: socket.socket, heard: list[bytes]) -> None:
    while True:
        try:
            client, _ = server.accept()
        except OSError:
            return
        with client:
            heard.append(client.recv(100))


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_vscode_sockets_in_tmp_are_hidden(
    worktree: Path,
    vscode_sockets: tuple[list[Path], list[bytes]],
    defence: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if defence == "off":
        old_list(monkeypatch)
    paths, heard = vscode_sockets
    send = (
        'python3 -c "import socket,sys\nfor p in sys.argv[1:]:\n'
        " s=socket.socket(socket.AF_UNIX)\n try: s.connect(p); s.sendall(b'run')\n"
        ' except OSError as e: print(p, e)" ' + " ".join(map(str, paths))
    )
    result = await bash(make_host(worktree), send)
    if defence == "off":
        for _ in range(100):
            if len(heard) == len(paths):
                break
            threading.Event().wait(0.02)
        assert heard == [b"run", b"run"], result.output  # the attack works: both heard it
    else:
        assert heard == [], result.output
        assert all(str(p) in result.output for p in paths), result.output  # each refused
