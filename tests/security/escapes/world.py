"""One case's world: its folders, environment, services, and the proof of an escape.

Folders, under the case's root: ``project`` (the command's working directory, the one
folder every sandbox is told it may write), ``outside`` (where a marker must never
appear), ``home`` (``$HOME`` for everything that runs, so dotfile attacks land in a
throwaway home) and ``run`` (``$XDG_RUNTIME_DIR``).  The root must not be below a
folder any sandbox under test leaves writable by default (``/tmp`` for Codex's
``workspace-write``, ``~/.cache`` for toolhost): ``bench/escapes.py`` uses
``/var/tmp``.

Services are real: TCP, UDP and Unix listeners that record what they hear, a victim
process (a stand-in for the editor or the sidecar: a process of this user outside the
sandbox, with a secret in its environment), a headless Neovim, a tmux server.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import ipaddress
import os
import pwd
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.security.escapes.corpus import Case, fill

NVIM = shutil.which("nvim") or str(Path(sys.prefix) / "bin" / "nvim")
PYTHON = os.path.realpath(sys.executable)
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_CONFIG_NOSYSTEM": "1",
}
# Variables of the developer's session that would point a command at their editor,
# agent or multiplexer rather than the world's.
_DROPPED = frozenset(
    {"TMUX", "TMUX_PANE", "TMUX_TMPDIR", "NVIM", "NVIM_LISTEN_ADDRESS", "SSH_AUTH_SOCK"}
    | {"VSCODE_IPC_HOOK", "VSCODE_IPC_HOOK_CLI", "DBUS_SESSION_BUS_ADDRESS", "TMPDIR"}
)
# `{unix_send} PATH` in a script: connect to a Unix socket (`@name`: an abstract one)
# and send a few bytes, saying why if it cannot.
UNIX_SEND = (
    f'{PYTHON} -c "import socket, sys; p = sys.argv[1]; s = socket.socket(socket.AF_UNIX); '
    "s.connect(chr(0) + p[1:] if p[0] == chr(64) else p); s.sendall(b'run this')\""
)
HEARTBEAT_WAIT = 0.5  # how long a process the sandbox's end should have killed may linger


@functools.cache
def host_ip() -> str | None:
    """This machine's address on its default route (no packet is sent)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.254", 9))
        address: str = s.getsockname()[0]
        return None if address.startswith("127.") else address
    return None


@functools.cache
def host_ip6() -> str | None:
    """A global (or unique-local) IPv6 address of this machine, if it has one."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw, _, _, scope, _, name = line.split()
            address = ipaddress.IPv6Address(int(raw, 16))
            if scope == "00" and name != "lo" and not address.is_loopback:
                return str(address)
    return None


@functools.cache
def internet() -> bool:
    """The package registries answer here (the only internet this machine may have)."""
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@functools.cache
def registry_ip() -> str:
    """The address of the registry not on the domain list (looked up outside)."""
    try:
        return str(socket.getaddrinfo("registry.npmjs.org", 443, socket.AF_INET)[0][4][0])
    except OSError:
        return ""


@functools.cache
def missing(need: str) -> str | None:
    """Why this machine cannot run a case that needs ``need`` (None: it can)."""
    checks = {
        "git": shutil.which("git") is not None,
        "nvim": os.access(NVIM, os.X_OK),
        "tmux": shutil.which("tmux") is not None,
        "gdb": shutil.which("gdb") is not None,
        "unshare": shutil.which("unshare") is not None,
        "root": os.geteuid() == 0,
        "host-ip": host_ip() is not None,
        "ipv6-global": host_ip6() is not None,
        "internet": internet(),
    }
    return None if checks[need] else f"needs {need}"


@dataclass
class Listeners:
    """TCP, UDP and Unix listeners in one thread, recording the bytes each one hears."""

    heard: list[bytes] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def tcp(self, name: str, family: int, address: str) -> None:
        sock = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, 0))
        self._stream(sock)
        self.ports[name] = sock.getsockname()[1]

    def udp(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", 0))
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, "datagram")
        self.ports["udp"] = sock.getsockname()[1]

    def unix(self, where: str) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if where.startswith("@"):
            sock.bind("\0" + where[1:])
        else:
            Path(where).parent.mkdir(parents=True, exist_ok=True)
            sock.bind(where)
            self.paths.append(where)
        self._stream(sock)

    def _stream(self, sock: socket.socket) -> None:
        sock.listen(16)
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, "listener")

    def start(self) -> None:
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            for key, _ in self.selector.select(0.05):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                with contextlib.suppress(OSError):
                    if key.data == "datagram":
                        self.heard.append(sock.recv(4096))
                    elif key.data == "listener":
                        conn, _ = sock.accept()
                        conn.setblocking(True)
                        conn.settimeout(2)
                        self.selector.register(conn, selectors.EVENT_READ, "connection")
                    else:  # one read, then the connection is closed: no client waits
                        data = sock.recv(4096)
                        if data:
                            self.heard.append(data)
                        self.selector.unregister(sock)
                        sock.close()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()
        for path in self.paths:
            with contextlib.suppress(OSError):
                os.unlink(path)


@dataclass
class World:
    """``build``, then ``start`` (setup and services), the run, ``proof``, ``stop``."""

    root: Path
    case: Case
    tag: str = field(default_factory=lambda: secrets.token_hex(6))
    secret: str = field(default_factory=lambda: secrets.token_hex(12))
    values: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    listeners: Listeners = field(default_factory=Listeners)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    snapshot: Any = None
    made: list[Path] = field(default_factory=list)  # folders outside the root we created
    victim_before: str | None = None

    @property
    def project(self) -> Path:
        return self.root / "project"

    def build(self) -> World:
        if self.root.exists():
            shutil.rmtree(self.root)
        for name in ("project", "outside", "home", "run"):
            (self.root / name).mkdir(parents=True)
        (self.root / "run").chmod(0o700)
        user = pwd.getpwuid(os.getuid()).pw_name
        self.values = {
            "root": str(self.root),
            "project": str(self.project),
            "outside": str(self.root / "outside"),
            "home": str(self.root / "home"),
            "run": str(self.root / "run"),
            "marker": str(self.root / "outside" / "pwned"),
            "tag": self.tag,
            "secret": self.secret,
            "python": PYTHON,
            "nvim": NVIM,
            "uid": str(os.getuid()),
            "user": user,
            "host_ip": host_ip() or "",
            "host_ip6": host_ip6() or "",
            "registry_ip": registry_ip() if internet() else "",
            "display": str(100 + secrets.randbelow(900)),
            "unix_send": UNIX_SEND,
        }
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
        env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        env.update(IDENTITY, HOME=self.values["home"], XDG_RUNTIME_DIR=self.values["run"])
        self.env = env
        return self

    def fill(self, text: str) -> str:
        return fill(text, self.values)

    def start(self) -> None:
        """The setup script, then the services; the proof's "before" is taken last."""
        if self.case.setup:
            self.shell(self.case.setup, "setup")
        for name in self.case.services:
            self._service(name)
        for where in self.case.sockets:
            where = self.fill(where)
            parent = Path(where).parent
            if not where.startswith("@") and not parent.exists():
                self._made(parent)
            self.listeners.unix(where)
        self.listeners.start()
        kind, value = self.case.proof
        if kind == "changed":
            self.snapshot = _state(Path(self.fill(value)))
        elif kind == "file" and os.path.lexists(self.fill(value)):
            raise RuntimeError(f"{self.case.id}: {self.fill(value)} exists before the attack")

    def shell(self, script: str, what: str) -> str:
        """Run ``script`` outside any sandbox, from the root; raise if it fails."""
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-ec", self.fill(script)],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0 and what == "setup":
            raise RuntimeError(f"{self.case.id}: {what} failed: {done.stdout}{done.stderr}")
        return done.stdout + done.stderr

    def _service(self, name: str) -> None:
        if name in ("tcp", "tcp6"):
            family = socket.AF_INET6 if name == "tcp6" else socket.AF_INET
            self.listeners.tcp(name, family, "::" if name == "tcp6" else "0.0.0.0")
            self.values[f"{name}_port"] = str(self.listeners.ports[name])
        elif name == "udp":
            self.listeners.udp()
            self.values["udp_port"] = str(self.listeners.ports["udp"])
        elif name == "victim":
            self._victim()
        elif name.startswith("nvim-"):
            self._neovim(in_runtime=name == "nvim-runtime")
        elif name == "tmux":
            self.values["tmux_name"] = f"esc{self.tag}"
            self.shell("tmux -L {tmux_name} -f /dev/null new-session -d -s esc", "setup")

    def _victim(self) -> None:
        pid_file = self.root / "victim.pid"
        code = "import os,sys,time; open(sys.argv[1],'w').write(str(os.getpid())); time.sleep(120)"
        victim = subprocess.Popen(
            [PYTHON, "-c", code, str(pid_file)],
            cwd=self.root / "outside",
            env={**self.env, "VICTIM_SECRET": self.secret},
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(victim)
        _wait_for(lambda: pid_file.exists() and pid_file.read_text(), "the victim started")
        self.values["victim_pid"] = str(victim.pid)
        kind, raw = self.case.proof
        if kind == "victim" and raw in ("nice", "limits", "affinity"):
            self.victim_before = _victim_detail(victim.pid, raw)

    def _neovim(self, *, in_runtime: bool) -> None:
        address = self.root / "nvim-address"
        env = {k: v for k, v in self.env.items() if k != "XDG_RUNTIME_DIR" or in_runtime}
        env["TMPDIR"] = "/tmp"
        write = f"call writefile([v:servername], '{address}')"
        editor = subprocess.Popen(
            [NVIM, "--headless", "--clean", "--cmd", write],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(editor)
        _wait_for(lambda: address.exists() and address.read_text().strip(), "Neovim listened")
        self.values["nvim_server"] = address.read_text().strip()

    def _made(self, folder: Path) -> None:
        """Create ``folder`` (outside the root), to be removed in ``stop``."""
        top = folder
        while not top.parent.exists():
            top = top.parent
        folder.mkdir(parents=True)
        self.made.append(top)

    # ---------------------------------------------------------------- proof

    def proof(self, output: str) -> str | None:
        """The evidence that the attack escaped, or None."""
        kind, raw = self.case.proof
        value = self.fill(raw)
        if kind == "file":
            return f"{value} was created" if os.path.lexists(value) else None
        if kind == "changed":
            after = _state(Path(value))
            return f"{value} changed" if after != self.snapshot else None
        if kind == "heard":
            for _ in range(10):  # a datagram or connection may still be on its way
                if self.listeners.heard:
                    break
                time.sleep(0.02)
            return (
                f"a listener heard {self.listeners.heard[0][:40]!r}"
                if self.listeners.heard
                else None
            )
        if kind == "output":
            return f"the output holds {value}" if value in output else None
        if kind == "alive":
            return _alive(value)
        if kind == "victim" and raw in ("nice", "limits", "affinity"):
            now = _victim_detail(int(self.values["victim_pid"]), raw)
            return f"the victim's {raw} changed: {now}" if now != self.victim_before else None
        if kind == "victim":  # a signal is delivered a moment after kill(2) returns
            for _ in range(15):
                state = _process_state(int(self.values["victim_pid"]))
                if state not in ("S", "R", "D"):
                    return f"the victim is {state or 'gone'}"
                time.sleep(0.02)
            return None
        raise ValueError(kind)

    def stop(self) -> None:
        self.listeners.stop()
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
            process.wait()
        if "tmux" in self.case.services:
            self.shell("tmux -L {tmux_name} kill-server", "stop")
        if self.case.proof[0] == "alive":
            _kill_named(self.fill(self.case.proof[1]))
        for path in [*(self.fill(p) for p in self.case.cleanup), *map(str, self.made)]:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _wait_for(ready: Any, what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting until {what}")
        time.sleep(0.02)


def _state(path: Path) -> tuple[Any, ...]:
    """What ``changed`` compares: type, mode, owner, size, times, content, names, xattrs."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ("missing",)
    content: Any = None
    if path.is_symlink():
        content = os.readlink(path)
    elif path.is_dir():
        content = sorted(os.listdir(path))
    elif path.is_file():
        content = hashlib.sha256(path.read_bytes()).hexdigest()
    xattrs: list[str] | None = None
    with contextlib.suppress(OSError):
        xattrs = sorted(os.listxattr(path, follow_symlinks=False))
    return (info.st_mode, info.st_uid, info.st_gid, info.st_size, info.st_mtime_ns, content, xattrs)


def _alive(name: str) -> str | None:
    """A process of ``name`` (its ``$0``) still running a moment after the sandbox
    ended: whatever killed the rest had time to."""
    deadline = time.monotonic() + HEARTBEAT_WAIT
    while True:
        found = _named(name)
        if not found:
            return None
        if time.monotonic() > deadline:
            return f"{name} still runs (pid {found[0]}) after the sandbox ended"
        time.sleep(0.05)


def _named(name: str) -> list[int]:
    """The live processes whose command line holds ``name``."""
    wanted = name.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            named = wanted in Path(f"/proc/{entry}/cmdline").read_bytes()
            if named and _process_state(int(entry)) not in (None, "Z"):
                found.append(int(entry))
    return found


def _kill_named(name: str) -> None:
    for pid in _named(name):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _victim_detail(pid: int, what: str) -> str | None:
    """The victim's nice value, resource limits or CPU affinity, as text."""
    try:
        if what == "nice":
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16]
        if what == "limits":
            return Path(f"/proc/{pid}/limits").read_text()
        return str(sorted(os.sched_getaffinity(pid)))
    except OSError:
        return None


def _process_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]
