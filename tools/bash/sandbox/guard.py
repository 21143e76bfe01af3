"""The supervisor: one small process per sidecar that starts every bash command.

Why a process of its own, rather than forking from the sidecar:

- **Nothing escapes it.** It is a child subreaper (``PR_SET_CHILD_SUBREAPER``), and
  so is every command it starts: a process that double-forks or calls ``setsid``
  (``env -i setsid -f sleep 100``) is re-parented to its command while that runs,
  and to the supervisor after, never to init. So a command's processes are exactly
  its descendants: ``kill`` ends all of them (SIGTERM, 200 ms, then SIGKILL until
  none is left), and when the sidecar goes away, however it goes (its socket
  closes, even on SIGKILL), the supervisor ends everything it ever started.
  Background jobs of a command that exited (``server &``) keep running until then.
- **Forking is safe here.** It is single-threaded, so between fork and exec the
  child can set up namespaces (``unshare(CLONE_NEWUSER)`` refuses a multi-threaded
  caller), mounts, seccomp and Landlock; and forking a small process is cheap.

Requests (``wire`` frames): ``spawn`` {id, argv, env, cwd, plan} with the output
pipe's write end, answered by ``started`` {id, pid, tmpdir, proxy} or ``failed`` {id,
error}; ``kill`` {id}. With ``proxy`` true, ``started`` carries the listening socket on
the command's loopback for the sidecar's proxy to accept on (``tools.network``).
The supervisor also sends ``exited`` {id, status} when a command's first process has
exited (after a ``kill``, once every one of its processes has). ``hello`` {pid,
support, tmp} comes first.

Each sandboxed command gets a private temp directory (``TMPDIR``, ``TMP``,
``TEMP``) below the supervisor's own, removed when the command ends (or, when it
left processes running, when the supervisor does).
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from tools.bash.sandbox import (
    bwrap,
    child,
    landlock,
    masks,
    notify,
    probe,
    proctable,
    reach,
    seccomp,
    stops,
    wire,
    zygote,
)
from tools.bash.sandbox.plan import Plan
from tools.bash.sandbox.syscalls import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl

TERM_GRACE = 0.2  # SIGTERM -> SIGKILL, as OpenCode's SIGKILL_TIMEOUT_MS
POLL = 0.01
KILL_ROUNDS = 200  # SIGKILL sweeps before giving up on a process that keeps forking


@dataclass
class _Kill:
    targets: dict[int, int]  # pid -> start time
    deadline: float
    killed: bool = False


@dataclass
class _Call:
    id: int
    pid: int
    tmpdir: str | None
    kill: _Kill | None = None
    status: int | None = None  # set once the leader is reaped
    reported: bool = False
    refused: list[dict[str, str]] = field(default_factory=list)  # kept from a closed watch


@dataclass
class _Standby:
    pid: int
    sock: socket.socket  # the order goes here


@dataclass
class Guard:
    sock: socket.socket
    me: int = field(default_factory=os.getpid)
    calls: dict[int, _Call] = field(default_factory=dict)  # by call id, until reported
    watched: dict[int, stops.Stops] = field(default_factory=dict)  # their stopped calls
    adopted: dict[int, int] = field(default_factory=dict)  # leftovers of finished calls
    stopping: bool = False
    standby: _Standby | None = None
    forker: zygote.Zygote | None = None

    def __post_init__(self) -> None:
        self.reader = wire.Reader(self.sock)
        self.support = probe.probe()
        self.seccomp_code = seccomp.program() if self.support.seccomp else None
        self.capture_code = notify.program() if self.support.seccomp else None
        self.creating_code = notify.program(notify.CREATING) if self.support.seccomp else None
        self.reach_code = reach.program() if self.support.seccomp else None
        self.selector: selectors.BaseSelector = selectors.DefaultSelector()
        self.tmp_root = tempfile.mkdtemp(prefix=f"toolhost-bash-{os.getppid()}-")
        self.placeholders = masks.Placeholders()
        self.forker = self._start_zygote()
        self.support.scoped = self.forker is not None

    # ---------------------------------------------------------------- the loop

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd is written
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(number, self._stop)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        selector = self.selector
        selector.register(self.sock, selectors.EVENT_READ, "socket")
        selector.register(wake_r, selectors.EVENT_READ, "signal")
        self._send({"op": "hello", "pid": self.me, "support": self.support.to_json()})
        try:
            while not self.stopping:
                killing = any(c.kill is not None for c in self.calls.values())
                for key, _ in selector.select(POLL if killing else None):
                    if key.data == "signal":
                        with contextlib.suppress(OSError):
                            os.read(wake_r, 4096)
                    elif isinstance(key.data, tuple):
                        self._serve_capture(*key.data)
                    else:
                        self._read()
                self._reap()
                self._advance_kills()
                if self.standby is None and not self.stopping:
                    self.standby = self._fork_standby()  # while nobody waits
        finally:
            self._shutdown()

    def _stop(self, *_: Any) -> None:
        self.stopping = True

    def _read(self) -> None:
        for message, fds in self.reader.read():
            try:
                self._handle(message, fds)
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if self.reader.closed:
            self.stopping = True

    def _handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "spawn":
            self._spawn(message, fds)
        elif op == "kill":
            call = self.calls.get(int(message["id"]))
            if call is not None and call.kill is None and not call.reported:
                self._start_kill(call)

    def _send(self, message: dict[str, Any], fd: int | None = None) -> None:
        try:
            wire.send(self.sock, message, [fd] if fd is not None else None)
        except OSError:
            self.stopping = True  # the sidecar is gone

    # ---------------------------------------------------------------- spawning

    def _spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        call_id = int(message["id"])
        plan = Plan.from_json(message["plan"])
        env = dict(message["env"])
        cwd = str(message["cwd"])
        argv = list(message["argv"])
        tmpdir = None
        ruleset: landlock.Ruleset | None = None
        layer = -1  # the second Landlock layer: new names only through ``creations``
        try:
            (stdout,) = fds
            if plan.engine != "none":
                tmpdir = tempfile.mkdtemp(prefix=f"call-{call_id}-", dir=self.tmp_root)
                env.update(TMPDIR=tmpdir, TMP=tmpdir, TEMP=tmpdir)
                plan.writable.append(tmpdir)
                plan.free.append(tmpdir)
            if plan.masked and (plan.namespaces or plan.engine == "bwrap"):
                # The guarded folders' missing names are refused by ``creations`` instead.
                wanted = [p for p in plan.masked if p not in plan.unmade]
                plan.protected += self.placeholders.take(call_id, wanted)
            if plan.engine == "landlock":
                spec = landlock.Spec(
                    writable=plan.writable,
                    devices=plan.devices,
                    read_denied=plan.read_denied,
                    deny_tcp=plan.network == "deny" and not plan.netns,
                    scope_abstract_unix=plan.network == "deny" and not plan.netns,
                )
                ruleset = landlock.build(spec, plan.landlock_abi)
                if plan.guarded:
                    layer = landlock.creations_layer(plan.writable, plan.free, plan.landlock_abi)
            if plan.engine == "bwrap":
                argv = bwrap.argv(plan, argv, cwd)
            pid, error, listener, proxy = self._fork(plan, argv, env, cwd, stdout, ruleset, layer)
        except Exception as failure:  # any failure is the command's, told
            pid, error, listener, proxy = 0, f"preparing the sandbox: {failure}", None, None
        finally:
            if ruleset is not None:
                ruleset.close()
            if layer >= 0:
                os.close(layer)
        if error:
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
            self.placeholders.release(call_id)
            self._send({"op": "failed", "id": call_id, "error": error})
            return
        self.calls[call_id] = _Call(call_id, pid, tmpdir)
        recording = self._watch(call_id, plan, listener, tmpdir)
        started = {"op": "started", "id": call_id, "pid": pid, "tmpdir": tmpdir}
        capture = recording if plan.capture is not None else None
        guard = recording if plan.guarded else None
        try:
            self._send({**started, "capture": capture, "guard": guard, "proxy": bool(proxy)}, proxy)
        finally:
            if proxy is not None:
                os.close(proxy)

    def _watch(
        self, call_id: int, plan: Plan, listener: int | str | None, tmpdir: str | None
    ) -> str | None:
        """Serve the command's stopped calls (keep what it changes, make its new names in
        the project): None when its plan asks neither, "on", or why it cannot be."""
        if plan.capture is None and not plan.guarded:
            return None
        if not isinstance(listener, int):
            return listener or "the capture filter is not available here"
        capture = None
        if plan.capture is not None:
            skip = [*plan.capture.get("skip", []), *([tmpdir] if tmpdir else [])]
            capture = {**plan.capture, "skip": skip}
        creations = None
        if plan.guarded:
            creations = {"guarded": plan.guarded, "free": plan.free}
            creations.update(writable=plan.writable, allowed=plan.repos_allowed, unmade=plan.unmade)
        try:
            watch = stops.Stops(listener, capture, creations)
        except OSError as error:
            return f"the capture folder could not be made ({error.strerror or error})"
        self.watched[call_id] = watch
        self.selector.register(watch.fileno(), selectors.EVENT_READ, (call_id, watch))
        return "on"

    def _serve_capture(self, call_id: int, watch: stops.Stops) -> None:
        if watch.serve():
            return
        # Every process of the command (background jobs too) is gone: its log is complete.
        self.selector.unregister(watch.fileno())
        watch.close()
        self.watched.pop(call_id, None)
        call = self.calls.get(call_id)
        if call is not None:  # its exit is still to be reported, with what was refused
            call.refused = watch.refused
        self._send({"op": "captured", "id": call_id})

    def _fork(
        self,
        plan: Plan,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        stdout: int,
        ruleset: landlock.Ruleset | None,
        layer: int = -1,
    ) -> tuple[int, str, int | str | None, int | None]:
        """(pid, "", listener, proxy) once the child has exec'd, or (0, what failed, None,
        None).

        ``listener``: the capture filter's listener fd the child sent, or why it has
        none (a plan without ``capture``: None). ``proxy``: the socket listening on the
        command's loopback (a plan with ``proxy``), else None.

        The child is the standby one forked while the previous command started
        (forking copies the supervisor's memory map, which costs about a
        millisecond on a virtual machine: it is paid while nobody waits for it);
        it gets the command through its socket.
        """
        if plan.engine == "none" or self.standby is None:  # mode off: outside the scope
            standby = self._fork_standby(scoped=plan.engine != "none")
        else:
            standby, self.standby = self.standby, None
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        fds = [stdin, stdout, status_w, *([ruleset.fd] if ruleset is not None else [])]
        fds += [layer] if ruleset is not None and layer >= 0 else []
        try:
            order = {"plan": plan.to_json(), "argv": argv, "env": env, "cwd": cwd}
            # A standby made by the zygote shares the commands' signal scope: an earlier
            # command may have stopped it (SIGSTOP). Never wait on a frozen one.
            with contextlib.suppress(ProcessLookupError):
                os.kill(standby.pid, signal.SIGCONT)
            try:
                wire.send(standby.sock, order, fds)
            except OSError as error:
                standby.sock.close()
                return 0, f"the child that was to run the command is gone ({error})", None, None
            os.close(status_w)
            status_w = -1
            # The next standby is made by the serve loop once this command has started
            # (through the zygote, two forks and a round trip: not on this one's path).
            report = b""
            while chunk := os.read(status_r, 4096):
                report += chunk
            proxy = child.proxy_listener(standby.sock) if plan.proxy and not report else None
            watched = plan.capture is not None or bool(plan.guarded)
            listener = child.listener(standby.sock) if watched else None
        finally:
            standby.sock.close()
            for fd in (status_r, status_w, stdin):
                if fd >= 0:
                    os.close(fd)
        if report:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(standby.pid, 0)
            if isinstance(listener, int):
                os.close(listener)
            return 0, report.decode(errors="replace"), None, None
        if plan.proxy and proxy is None:  # it runs without its only way out: end it
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(standby.pid, signal.SIGKILL)
                os.waitpid(standby.pid, 0)
            if isinstance(listener, int):
                os.close(listener)
            return 0, "the proxy's listener did not reach the supervisor", None, None
        return standby.pid, "", listener, proxy

    def _start_zygote(self) -> zygote.Zygote | None:
        """The forker of sandboxed commands, in the domain that scopes their signals
        (Landlock ABI 6); None where there is no such scope (and the notes say why)."""
        if self.support.landlock_abi < 6 or "no-scope" in self.support.simulated:
            return None
        try:
            return zygote.start(self.support.landlock_abi, self._become)
        except OSError as error:
            self.support.notes.append(str(error))
            return None

    def _fork_standby(self, scoped: bool = True) -> _Standby:
        """A child that waits for the command it is to become; ``scoped``: made by the
        zygote, in the domain that scopes signals (a second zygote if the first one
        is gone), else forked here."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if scoped and self.support.scoped:
            for _ in range(2):
                self.forker = self.forker or self._start_zygote()
                if self.forker is None:
                    break
                try:
                    pid = self.forker.standby(theirs)
                except OSError:
                    self.forker.close()
                    self.forker = None
                    continue
                theirs.close()
                return _Standby(pid, ours)
        pid = os.fork()
        if pid == 0:  # the standby child
            ours.close()
            self._become(theirs)
        theirs.close()
        return _Standby(pid, ours)

    def _become(self, sock: socket.socket) -> NoReturn:
        """In the standby child: wait for the order, then run it (never returns)."""
        try:
            for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGCHLD):
                signal.signal(number, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            # Made by the zygote's fork, which exits at once: wait until this process
            # is the supervisor's (a child subreaper) before asking to die with it.
            deadline = time.monotonic() + 5
            while os.getppid() != self.me and time.monotonic() < deadline:
                time.sleep(0.0002)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.me:
                os._exit(0)
            # Nothing of the supervisor's stays open here: not its socket, nor a pipe
            # of another command (whose end of output would wait for this process).
            keep = sock.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, 1 << 20)
            reader = wire.Reader(sock)
            frames: list[tuple[dict[str, Any], list[int]]] = []
            while not frames and not reader.closed:
                frames = reader.read()
            if not frames:
                os._exit(0)  # the supervisor is done with us
            order, fds = frames[0]
            plan = Plan.from_json(order["plan"])
            stdin, stdout, status = fds[:3]
            child.run(
                plan,
                order["argv"],
                order["env"],
                order["cwd"],
                stdin,
                stdout,
                status,
                ruleset_fd=fds[3] if len(fds) > 3 else -1,
                seccomp_code=self.seccomp_code if plan.seccomp else None,
                supervisor=self.me,
                capture_code=self.capture_code
                if plan.capture is not None
                else self.creating_code
                if plan.guarded
                else None,
                reach_code=self.reach_code if plan.engine != "none" else None,
                channel=sock.fileno(),
                creations_fd=fds[4] if len(fds) > 4 else -1,
            )
        finally:
            os._exit(child.EXEC_FAILED)

    # ---------------------------------------------------------------- endings

    def _reap(self) -> None:
        leaders = {c.pid: c for c in self.calls.values() if c.status is None}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            self.adopted.pop(pid, None)
            if self.forker is not None and pid == self.forker.pid:
                self.forker.close()
                self.forker = None  # killed by a command: the next standby starts another
            if self.standby is not None and pid == self.standby.pid:
                self.standby.sock.close()
                self.standby = None
            call = leaders.get(pid)
            if call is not None:
                call.status = os.waitstatus_to_exitcode(status)
                if call.kill is None:
                    self._finish(call)

    def _finish(self, call: _Call) -> None:
        """The leader is reaped (and a kill, if any, is done): report, then tidy up."""
        call.reported = True
        self.calls.pop(call.id, None)
        leftovers: dict[int, int] = {}
        if call.kill is None:
            # Its orphans were started after it: their pids are higher (unless pids
            # wrapped around meanwhile; then they are counted with a later call).
            leftovers = self._strays(proctable.table(since=call.pid))
            self.adopted.update(leftovers)  # they belong to this call: keep them running
        if not leftovers:  # before the result: the project is as the command left it
            self.placeholders.release(call.id)
        watch = self.watched.get(call.id)
        refused = watch.refused if watch is not None else call.refused
        self._send({"op": "exited", "id": call.id, "status": call.status, "refused": refused})
        if not leftovers and call.tmpdir:
            shutil.rmtree(call.tmpdir, ignore_errors=True)

    def _strays(self, processes: dict[int, proctable.Stat]) -> dict[int, int]:
        """Children of the supervisor that are neither a running command nor a known
        leftover: the orphans of a command whose first process just exited."""
        leaders = {c.pid for c in self.calls.values() if c.status is None}
        if self.standby is not None:
            leaders.add(self.standby.pid)
        if self.forker is not None:
            leaders.add(self.forker.pid)
        return {
            pid: stat.start
            for pid, stat in processes.items()
            if stat.ppid == self.me
            and stat.state != "Z"
            and pid not in leaders
            and pid not in self.adopted
        }

    def _start_kill(self, call: _Call) -> None:
        processes = proctable.table()
        targets = self._tree(call, processes)
        _signal(targets, signal.SIGTERM)
        call.kill = _Kill(targets, time.monotonic() + TERM_GRACE)

    def _tree(self, call: _Call, processes: dict[int, proctable.Stat]) -> dict[int, int]:
        """Every live process of the call: the leader (while it runs), its descendants,
        and orphans that reached the supervisor when a process of the call died."""
        tree: dict[int, int] = {}
        # The leader is our child: until it is reaped, its pid cannot be reused.
        leader = processes.get(call.pid)
        if call.status is None and leader is not None and leader.state != "Z":
            tree[call.pid] = leader.start
        roots = [call.pid, *(call.kill.targets if call.kill else ())]
        strays = self._strays(processes)
        tree.update(strays)
        tree.update(proctable.descendants(processes, [*roots, *strays]))
        if call.kill is not None:
            tree.update(
                {p: s for p, s in call.kill.targets.items() if proctable.alive(processes, p, s)}
            )
        return tree

    def _live_tree(self, call: _Call) -> dict[int, int]:
        return self._tree(call, proctable.table())

    def _advance_kills(self) -> None:
        for call in [c for c in self.calls.values() if c.kill is not None]:
            kill = call.kill
            assert kill is not None
            processes = proctable.table()
            live = self._tree(call, processes)
            kill.targets.update(live)
            if not live and call.status is not None:
                call.kill = None
                self._finish(call)
            elif time.monotonic() >= kill.deadline and not kill.killed:
                kill.killed = True
                _sweep(functools.partial(self._live_tree, call))

    def _shutdown(self) -> None:
        """The sidecar is gone: end every process ever started, remove the temp dirs."""
        if self.standby is not None:
            self.standby.sock.close()  # it exits on its own
        if self.forker is not None:
            self.forker.close()  # and so does the zygote
        everyone = proctable.descendants(proctable.table(), [self.me])
        _signal(everyone, signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE
        while time.monotonic() < deadline:
            time.sleep(POLL)
            if not proctable.descendants(proctable.table(), [self.me]):
                break
        _sweep(lambda: proctable.descendants(proctable.table(), [self.me]))
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        self.placeholders.release_all()  # no command is left to use them
        shutil.rmtree(self.tmp_root, ignore_errors=True)


def _signal(targets: dict[int, int], number: signal.Signals) -> None:
    processes = proctable.table()
    for pid, start in targets.items():
        if proctable.alive(processes, pid, start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, number)


def _sweep(find: Any) -> None:
    """SIGKILL whatever ``find()`` returns until it returns nothing: a process forking
    meanwhile only adds children that the next round finds."""
    for _ in range(KILL_ROUNDS):
        targets = find()
        if not targets:
            return
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.001)


def main(fd: int) -> None:
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    sock = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    Guard(sock).serve()
