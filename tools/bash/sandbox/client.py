"""The sidecar's side of the supervisor (``guard``): start it once, ask it to run and
kill commands, hear when they exit.

One supervisor per sidecar process, started on first use and again if it dies.
A reader thread receives its messages and settles each call's futures on the
event loop that made the call, so any loop (each test's, the server's) can use it.
The supervisor is started with ``-I -S`` and a stand-in ``tools`` package, so it
imports only the standard library and ``tools.bash.sandbox``: it is up in tens of
milliseconds and its memory stays small.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.bash.sandbox import wire
from tools.bash.sandbox.plan import Plan
from tools.bash.sandbox.probe import SIMULATE_VAR, Support

log = logging.getLogger("toolhost.sandbox")

START_TIMEOUT = 20.0
_TOOLS_DIR = str(Path(__file__).resolve().parents[2])
_BOOT = (
    "import sys, types\n"
    "package = types.ModuleType('tools')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['tools'] = package\n"
    "from tools.bash.sandbox.guard import main\n"
    "main(int(sys.argv[2]))\n"
)


class SupervisorError(RuntimeError):
    """The supervisor could not start a command, or is gone."""


@dataclass
class Started:
    pid: int
    tmpdir: str | None
    exited: asyncio.Future[Exited]
    # The plan's capture: "on", why it is off, or None (not asked for).
    capture: str | None = None
    # Settled when every process of the command is gone and its capture log complete.
    captured: asyncio.Future[None] | None = None
    # The socket listening on the command's loopback (a plan with ``proxy``): the
    # caller's to serve (``tools.network.proxy``) and close.
    proxy: socket.socket | None = None
    # The guard on new repositories (``creations``): "on", why it is off, or None.
    guard: str | None = None


@dataclass(frozen=True)
class Exited:
    status: int  # the exit code, or -N for a signal
    # What the guard on new repositories refused: {"kind", "path"} (``creations``).
    refused: tuple[dict[str, str], ...] = ()


@dataclass
class _Waiting:
    loop: asyncio.AbstractEventLoop
    started: asyncio.Future[Started] = field(init=False)
    exited: asyncio.Future[Exited] = field(init=False)
    captured: asyncio.Future[None] = field(init=False)
    # Seen by the reader thread (the futures settle later, on their loop).
    recording: bool = False
    exited_seen: bool = False
    captured_seen: bool = False

    def __post_init__(self) -> None:
        self.started = self.loop.create_future()
        self.exited = self.loop.create_future()
        self.captured = self.loop.create_future()


class Supervisor:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, _TOOLS_DIR, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # the sidecar's stdout may be JSON-RPC
                start_new_session=True,  # a signal to the sidecar's group is not for it
            )
        self.sock = ours
        self.reader = wire.Reader(ours)
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiting] = {}
        self.alive = True
        hello = self._hello()
        self.pid = int(hello["pid"])
        self.support = Support.from_json(hello["support"])
        self._thread = threading.Thread(target=self._listen, name="sandbox-supervisor", daemon=True)
        self._thread.start()

    def _hello(self) -> dict[str, Any]:
        self.sock.settimeout(START_TIMEOUT)
        try:
            while True:
                frames = self.reader.read()
                if frames:
                    message, _ = frames[0]
                    if message.get("op") == "hello":
                        return message
                if self.reader.closed:
                    raise SupervisorError("the sandbox supervisor exited as it started")
        except TimeoutError as error:
            self.process.kill()
            raise SupervisorError("the sandbox supervisor did not start in time") from error
        finally:
            self.sock.settimeout(None)

    async def spawn(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], plan: Plan, stdout: int
    ) -> tuple[int, Started]:
        """Start a command; (its call id, Started). Raises ``SupervisorError``."""
        call_id = next(self._ids)
        waiting = _Waiting(asyncio.get_running_loop())
        self._waiting[call_id] = waiting
        message = {
            "op": "spawn",
            "id": call_id,
            "argv": list(argv),
            "cwd": str(cwd),
            "env": dict(env),
            "plan": plan.to_json(),
        }
        try:
            self._send(message, [stdout])
            return call_id, await waiting.started
        except BaseException:
            self._waiting.pop(call_id, None)
            self.kill(call_id)  # cancelled while it started: it must not run on unwatched
            raise

    def kill(self, call_id: int) -> None:
        with contextlib.suppress(SupervisorError):
            self._send({"op": "kill", "id": call_id})

    def _send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        if not self.alive:
            raise SupervisorError("the sandbox supervisor has exited")
        try:
            with self._send_lock:
                wire.send(self.sock, message, fds)
        except OSError as error:
            raise SupervisorError(f"the sandbox supervisor is gone ({error})") from error

    def _listen(self) -> None:
        try:
            while not self.reader.closed:
                for message, fds in self.reader.read():
                    kept = self._dispatch(message, fds)
                    for fd in fds:
                        if fd != kept:
                            os.close(fd)
        except Exception:  # a broken supervisor: log it, fail its calls
            log.exception("the sandbox supervisor's messages could not be read")
        finally:
            self.alive = False
            with contextlib.suppress(OSError):
                self.sock.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
            gone = SupervisorError("the sandbox supervisor exited")
            for waiting in list(self._waiting.values()):
                _settle(waiting.started, error=gone)
                _settle(waiting.exited, error=gone)
                _settle(waiting.captured, None)
            self._waiting.clear()

    def _dispatch(self, message: dict[str, Any], fds: list[int]) -> int | None:
        """Settle what ``message`` answers; the descriptor it hands over, if any (the
        caller closes the others)."""
        op = message.get("op")
        call_id = int(message.get("id", 0))
        waiting = self._waiting.get(call_id)
        if waiting is None:
            return None
        if op == "started":
            capture = message.get("capture")
            waiting.recording = capture == "on"
            proxy = fds[0] if message.get("proxy") and fds else None
            started = Started(
                int(message["pid"]),
                message.get("tmpdir"),
                waiting.exited,
                capture,
                waiting.captured if capture == "on" else None,
                socket.socket(fileno=proxy) if proxy is not None else None,
                message.get("guard"),
            )
            _settle(waiting.started, started)
            return proxy
        elif op == "failed":
            self._waiting.pop(call_id, None)
            _settle(waiting.started, error=SupervisorError(str(message.get("error"))))
        elif op == "exited":
            refused = tuple(r for r in message.get("refused") or () if isinstance(r, dict))
            exited = Exited(int(message["status"]), refused)
            _settle(waiting.exited, exited)
            waiting.exited_seen = True
            if waiting.captured_seen or not waiting.recording:
                self._waiting.pop(call_id, None)
        elif op == "captured":
            _settle(waiting.captured, None)
            waiting.captured_seen = True
            if waiting.exited_seen:
                self._waiting.pop(call_id, None)
        return None

    def close(self) -> None:
        """End the supervisor (and with it every process it started)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)


def _settle(
    future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None
) -> None:
    def settle() -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        future.get_loop().call_soon_threadsafe(settle)


_lock = threading.Lock()
_supervisor: Supervisor | None = None
_owner: tuple[int, str] = (0, "")
_failed: tuple[tuple[int, str], float, str] | None = None  # (owner, when, why)
RETRY_AFTER = 60.0  # seconds before trying again to start a supervisor that failed


def supervisor() -> Supervisor:
    """This process's supervisor, started (blocking, tens of ms) when there is none.

    A new one is started when ``TOOLHOST_SANDBOX_SIMULATE`` changed since (tests
    switch it), and after a fork.
    """
    global _supervisor, _owner, _failed
    wanted = (os.getpid(), os.environ.get(SIMULATE_VAR, ""))
    with _lock:
        if _supervisor is None or not _supervisor.alive or _owner != wanted:
            recent = _failed is not None and time.monotonic() - _failed[1] < RETRY_AFTER
            if _failed is not None and recent and _failed[0] == wanted:
                raise SupervisorError(_failed[2])  # not again on every command
            if _supervisor is not None and _owner[0] == os.getpid():
                _supervisor.close()
            try:
                _supervisor = Supervisor()
            except (SupervisorError, OSError) as error:
                _supervisor = None
                _failed = (wanted, time.monotonic(), str(error))
                raise SupervisorError(str(error)) from error
            _owner, _failed = wanted, None
        return _supervisor


async def running() -> Supervisor:
    """``supervisor()`` from a coroutine: at once when one is up, else started in a
    worker thread (starting blocks for tens of milliseconds)."""
    found = current()
    if found is not None and _owner[1] == os.environ.get(SIMULATE_VAR, ""):
        return found
    return await asyncio.to_thread(supervisor)


def current() -> Supervisor | None:
    """The running supervisor, without starting one."""
    with _lock:
        alive = _supervisor is not None and _supervisor.alive and _owner[0] == os.getpid()
        return _supervisor if alive else None
