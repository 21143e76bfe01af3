"""Running a command as a process tree that a timeout or a cancellation ends whole.

``run`` starts one process in its own session, with stdin from /dev/null and
stderr on the stdout pipe (one pipe: output keeps its arrival order), and streams
its output, decoded as UTF-8, to a callback.

With a ``plan`` (the bash tool always passes one), the sandbox supervisor
(``tools.bash.sandbox.guard``) starts the process under that plan. It is the child
subreaper of every command, so nothing a command starts can leave its tree:
``env -i setsid -f`` and double forks included. Ending it ("kill the tree") is its
job too: SIGTERM to every process of the command, a 200 ms grace, then SIGKILL
until none is left. When the sidecar exits, however it exits, the supervisor
ends every process it ever started.

Without a plan (the supervisor could not start, or a caller that wants no
sandbox), the process is started directly and its tree is found from /proc:

- its process group: everything it started that did not leave the group;
- its descendants by parent links (``/proc/<pid>/stat``), collected *before* any
  signal, while they are still linked: a child that called ``setsid`` left the
  group but not the tree;
- every process whose environment carries this run's ``TOOLHOST_RUN_ID``: the
  double-fork idiom (``(setsid cmd &)``) orphans ``cmd`` to init, out of both the
  group and the tree, but it still inherits the environment.

Those scans are best effort (a process that cleared its environment and
double-forked escapes them); the supervisor's are not.

With the domain lists (a plan with ``proxy``), ``egress`` serves the listener on the
command's loopback (``tools.network.proxy``) from its start until its first process
exits: background jobs it leaves running have no network after that.

Every path, cancellation included, reaps the spawned process: no zombie is left.
When the command exits by itself, jobs it left running in the background (``cmd &``)
are not killed, as in OpenCode: a server started that way keeps running (until
the sidecar exits). Output they write after a short grace is read and dropped, so
they never block on a full pipe nor die of SIGPIPE.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import socket
import subprocess
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tools.bash.sandbox import client
from tools.bash.sandbox.plan import Plan

log = logging.getLogger("toolhost.process")

RUN_ID_VAR = "TOOLHOST_RUN_ID"
SIGKILL_DELAY = 0.2  # SIGTERM → SIGKILL (OpenCode's SIGKILL_TIMEOUT_MS)
KILL_POLL = 0.01
# After the command exits: how long to keep reading output that is still on its way
# before leaving the pipe to a background job that holds it open.
EXIT_DRAIN = 0.2
# After a kill: how long the pipe may stay open (a holder we could not signal).
KILLED_DRAIN = 1.0
# Output kept in memory: past this many characters the middle is dropped (head and
# tail kept) so a runaway command (`yes`) cannot exhaust memory before its timeout.
CAPTURE_LIMIT = 16_000_000

_PROC = Path("/proc")


@dataclass(frozen=True)
class Finished:
    output: str
    exit: int | None  # None when the process was ended by a signal
    timed_out: bool
    tmpdir: str | None = None  # its private temp directory (sandboxed runs only)
    capture: str | None = None  # the plan's capture: "on", why it is off, or None
    guard: str | None = None  # the guard on new repositories: "on", why it is off, or None
    refused: tuple[dict[str, str], ...] = ()  # what that guard refused (``creations``)


class Egress(Protocol):
    """What serves a sandboxed command's only way out (``tools.network.proxy.Proxy``)."""

    def serve(self, listener: socket.socket) -> None: ...

    async def close(self) -> None: ...


class StartError(OSError):
    """The command could not be started (the sandbox could not be set up, exec failed)."""


async def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
    on_output: Callable[[str], None] | None = None,
    capture_limit: int = CAPTURE_LIMIT,
    plan: Plan | None = None,
    egress: Egress | None = None,
) -> Finished:
    """Run ``argv`` to its end, or until ``timeout`` seconds, then kill its tree.

    ``plan``: run it through the sandbox supervisor, under that plan; ``egress`` serves
    its proxy listener (without one, a plan with ``proxy`` has no way out at all).
    Cancellation (``asyncio.CancelledError``) kills the tree, reaps, and re-raises.
    """
    if plan is not None:
        capture = Capture(capture_limit, on_output)
        return await _supervised(argv, cwd, env, timeout, capture, plan, egress)
    loop = asyncio.get_running_loop()
    run_id = uuid.uuid4().hex
    capture = Capture(capture_limit, on_output)
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(capture, loop),
        *argv,
        cwd=cwd,
        env={**env, RUN_ID_VAR: run_id},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tree = ProcessTree(transport, protocol, run_id)
    try:
        timed_out = False
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(protocol.exited)
        except TimeoutError:
            timed_out = True
            await tree.kill()
        await _settle(protocol, capture, KILLED_DRAIN if timed_out else EXIT_DRAIN)
    except BaseException:
        await _uninterrupted(_abandon(tree, protocol, capture))
        raise
    return Finished(capture.text(), _exit_code(transport.get_returncode()), timed_out)


async def _supervised(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
    capture: Capture,
    plan: Plan,
    egress: Egress | None = None,
) -> Finished:
    supervisor = await client.running()
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        call_id, started = await supervisor.spawn(
            argv, cwd=cwd, env={**env, RUN_ID_VAR: uuid.uuid4().hex}, plan=plan, stdout=write_end
        )
    except client.SupervisorError as error:
        os.close(read_end)
        raise StartError(str(error)) from error
    finally:
        os.close(write_end)
    if started.proxy is not None:
        if egress is not None:
            egress.serve(started.proxy)
        else:
            started.proxy.close()
    try:
        return await _watch(supervisor, call_id, started, read_end, timeout, capture)
    finally:
        if egress is not None:
            await _uninterrupted(egress.close())


async def _watch(
    supervisor: client.Supervisor,
    call_id: int,
    started: client.Started,
    read_end: int,
    timeout: float | None,
    capture: Capture,
) -> Finished:
    """Stream a supervised command's output until it ends (or ``timeout``: kill it)."""
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(read_end, "rb", buffering=0)
    protocol = _PipeProtocol(capture, loop)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
    except BaseException:
        pipe.close()
        protocol.connection_lost(None)  # no output will come through it
        await _uninterrupted(_end_supervised(supervisor, call_id, started, protocol, capture))
        raise
    try:
        timed_out = False
        try:
            async with asyncio.timeout(timeout):
                exited = await asyncio.shield(started.exited)
        except TimeoutError:
            timed_out = True
            supervisor.kill(call_id)
            exited = await started.exited
        await _settle(protocol, capture, KILLED_DRAIN if timed_out else EXIT_DRAIN)
    except BaseException:
        await _uninterrupted(_end_supervised(supervisor, call_id, started, protocol, capture))
        raise
    finally:
        transport.close()
    return Finished(
        capture.text(),
        _exit_code(exited.status),
        timed_out,
        tmpdir=started.tmpdir,
        capture=started.capture,
        guard=started.guard,
        refused=exited.refused,
    )


async def _end_supervised(
    supervisor: client.Supervisor,
    call_id: int,
    started: client.Started,
    protocol: _PipeProtocol,
    capture: Capture,
) -> None:
    supervisor.kill(call_id)
    with contextlib.suppress(client.SupervisorError):
        await started.exited
    await _settle(protocol, capture, KILLED_DRAIN)


class _PipeProtocol(asyncio.Protocol):
    """Feeds the output pipe of a supervised command to a Capture."""

    def __init__(self, capture: Capture, loop: asyncio.AbstractEventLoop) -> None:
        self.capture = capture
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self.capture.feed(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.capture.feed(b"", final=True)
        _resolve(self.output_closed)


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds the one output pipe to a Capture and tells when the process and the pipe end.

    The output is read as it comes (no back-pressure: the Capture bounds memory), so
    the pipe never fills and a writer never blocks on it.
    """

    def __init__(self, capture: Capture, loop: asyncio.AbstractEventLoop) -> None:
        self.capture = capture
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()
        self._transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.capture.feed(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.capture.feed(b"", final=True)
        _resolve(self.output_closed)
        self._close_when_done()

    def process_exited(self) -> None:
        _resolve(self.exited)
        self._close_when_done()

    def _close_when_done(self) -> None:
        # Closing a transport kills a process still running: only once both ended.
        if self.exited.done() and self.output_closed.done() and self._transport is not None:
            self._transport.close()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Capture:
    """Decoded output: incremental UTF-8 (a character split across reads is kept
    whole), bounded to ``limit`` characters by dropping the middle."""

    def __init__(self, limit: int, on_output: Callable[[str], None] | None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._on_output = on_output
        self._half = max(1, limit // 2)
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._dropped = 0
        self.detached = False

    def feed(self, data: bytes, *, final: bool = False) -> None:
        if self.detached:
            return
        text = self._decoder.decode(data, final)
        if not text:
            return
        self._keep(text)
        if self._on_output is not None:
            self._on_output(text)

    def detach(self) -> None:
        """Stop recording: what arrives from now on is read and dropped."""
        self.feed(b"", final=True)
        self.detached = True

    def text(self) -> str:
        head = "".join(self._head)
        if not self._tail:
            return head
        tail = "".join(self._tail)
        if self._dropped:
            mark = f"\n\n... {self._dropped} characters of output omitted ...\n\n"
            return head + mark + tail
        return head + tail

    def _keep(self, text: str) -> None:
        room = self._half - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._half:
            excess = self._tail_len - self._half
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_len -= len(first)
                self._dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_len -= excess
                self._dropped += excess


async def _settle(protocol: _Protocol | _PipeProtocol, capture: Capture, grace: float) -> None:
    """Wait up to ``grace`` for the end of output; then leave the pipe to its holders."""
    await asyncio.wait({protocol.output_closed}, timeout=grace)
    if not protocol.output_closed.done():
        capture.detach()


async def _abandon(tree: ProcessTree, protocol: _Protocol, capture: Capture) -> None:
    """The call is being cancelled (or failed): end everything, reap, stop recording."""
    await tree.kill()
    await _settle(protocol, capture, KILLED_DRAIN)


async def _uninterrupted(work: Coroutine[Any, Any, None]) -> None:
    """Run cleanup to its end even if the caller is cancelled again meanwhile."""
    task = asyncio.ensure_future(work)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("cleaning up a cancelled process failed", exc_info=task.exception())


def _exit_code(returncode: int | None) -> int | None:
    # asyncio reports "killed by signal N" as -N; like Node's exitCode, that is no code.
    return returncode if returncode is not None and returncode >= 0 else None


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgrp: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart


class ProcessTree:
    """A spawned session leader plus everything it started (see the module doc)."""

    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: _Protocol, run_id: str
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self.pid = transport.get_pid()
        self.pgid = self.pid  # start_new_session: the leader's pid is the group id
        self._marker = f"{RUN_ID_VAR}={run_id}".encode()

    async def kill(self) -> None:
        """SIGTERM, up to 200 ms to go, SIGKILL; then reap the leader."""
        targets = await asyncio.to_thread(self._collect, {})
        self._signal(targets, signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SIGKILL_DELAY
        while loop.time() < deadline:
            await asyncio.sleep(KILL_POLL)
            if not await asyncio.to_thread(self._any_alive, targets):
                break
        else:
            targets = await asyncio.to_thread(self._collect, targets)
            self._signal(targets, signal.SIGKILL)
        # asyncio's child watcher reaps the leader; wait until it has.
        await asyncio.shield(self._protocol.exited)

    def _collect(self, known: dict[int, int]) -> dict[int, int]:
        """pid → start time of every process of this run, ``known`` ones still alive."""
        table = _process_table()
        found = {pid: start for pid, start in known.items() if _same(table, pid, start)}
        if self._transport.get_returncode() is None:  # once reaped, its pid may be reused
            children: dict[int, list[int]] = {}
            for pid, stat in table.items():
                children.setdefault(stat.ppid, []).append(pid)
            stack = [self.pid]
            while stack:
                for child in children.get(stack.pop(), ()):
                    if child not in found:
                        found[child] = table[child].start
                        stack.append(child)
        for pid, stat in table.items():
            if pid not in found and stat.state != "Z" and self._marked(pid):
                found[pid] = stat.start
        found.pop(os.getpid(), None)
        return found

    def _marked(self, pid: int) -> bool:
        try:
            environ = (_PROC / str(pid) / "environ").read_bytes()
        except OSError:
            return False
        return any(entry == self._marker for entry in environ.split(b"\0"))

    def _signal(self, targets: dict[int, int], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)
        table = _process_table()
        for pid, start in targets.items():
            if _same(table, pid, start) or not table:  # no /proc: trust the pid
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)

    def _any_alive(self, targets: dict[int, int]) -> bool:
        table = _process_table()
        if not table:
            try:
                os.killpg(self.pgid, 0)
            except (ProcessLookupError, PermissionError):
                return False
            return True
        if any(s.pgrp == self.pgid and s.state != "Z" for s in table.values()):
            return True
        return any(_same(table, pid, start) for pid, start in targets.items())


def _same(table: dict[int, _Stat], pid: int, start: int) -> bool:
    stat = table.get(pid)
    return stat is not None and stat.start == start and stat.state != "Z"


def _process_table() -> dict[int, _Stat]:
    """Every visible process's parent, group, state and start time (empty without /proc)."""
    table: dict[int, _Stat] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return table
    for name in entries:
        if not name.isdigit():
            continue
        try:
            raw = (_PROC / name / "stat").read_bytes()
        except OSError:
            continue  # it exited meanwhile
        # "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
        # cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime"
        # comm may hold spaces and parentheses: split after its last ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            table[int(name)] = _Stat(
                ppid=int(fields[1]),
                pgrp=int(fields[2]),
                state=fields[0].decode(),
                start=int(fields[19]),
            )
        except (IndexError, ValueError):
            continue
    return table
