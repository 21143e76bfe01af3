"""The forker of sandboxed commands: one process in a Landlock domain that only scopes
signals and abstract Unix sockets, which every sandboxed command then shares.

Why one, and not a scope per command: Landlock's ``LANDLOCK_SCOPE_SIGNAL`` (ABI 6)
stops a process from signalling any process outside the domain where the scope was
set.  Set in each command's own domain, it would also stop a command from ending the
server an earlier command left running (``npm run dev &``, then ``kill``), since that
one lives in a sibling domain.  Set once, here, every command's domain nests in this
one: commands signal each other's processes, and nothing else: not the sidecar, not
the editor, not the supervisor, which stays outside.  ``LANDLOCK_SCOPE_ABSTRACT_UNIX_
SOCKET`` the same way: no abstract socket of a program outside (an X server's, a
session bus's) can be reached, whatever the network setting.

The supervisor forks the zygote when it starts and asks it for each standby child
(the process that will become a command), passing the standby's end of a socket
pair.  The zygote forks; that fork forks the standby and exits at once, so the
standby is re-parented to the supervisor (a child subreaper), which waits for it and
its command as for any child of its own.  A command can still signal the zygote (it
is in the shared domain): the supervisor wakes it before each request, and starts
another when it is gone or does not answer.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable
from typing import NoReturn

from tools.bash.sandbox import landlock, wire
from tools.bash.sandbox.syscalls import PR_SET_PDEATHSIG, prctl

Become = Callable[[socket.socket], NoReturn]
ANSWER_TIMEOUT = 5.0  # two forks take milliseconds


class Zygote:
    """The supervisor's handle: ``standby(sock)`` returns the new standby's pid."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.reader = wire.Reader(sock)

    def standby(self, theirs: socket.socket) -> int:
        """Have a standby child made with ``theirs`` as its socket; raises ``OSError``
        when the zygote is gone, or does not answer (a command can signal it: it is
        woken first, and one that still does not answer is killed)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGCONT)
        self.sock.settimeout(ANSWER_TIMEOUT)
        try:
            wire.send(self.sock, {"op": "standby"}, [theirs.fileno()])
            while True:
                frames = self.reader.read()
                if frames:
                    return int(frames[0][0]["pid"])
                if self.reader.closed:
                    raise ConnectionError("the zygote is gone")
        except OSError:  # gone, or stuck past the timeout (the reader sees it closed)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            raise
        finally:
            self.sock.settimeout(None)

    def close(self) -> None:
        self.sock.close()


def start(abi: int, become: Become) -> Zygote:
    """Fork the zygote (from the single-threaded supervisor); ``become`` is what a
    standby child runs.  Raises ``OSError`` when the scope cannot be set here."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # the zygote
        try:
            ours.close()
            os.close(status_r)
            _enter(abi)
            os.close(status_w)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.write(status_w, str(error).encode(errors="replace")[:500])
            os._exit(1)
        _serve(theirs, become)
    theirs.close()
    os.close(status_w)
    report = b""
    while chunk := os.read(status_r, 4096):
        report += chunk
    os.close(status_r)
    if report:
        os.waitpid(pid, 0)
        ours.close()
        raise OSError(f"the signal scope cannot be set: {report.decode(errors='replace')}")
    return Zygote(pid, ours)


def _enter(abi: int) -> None:
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # it goes with the supervisor
    landlock.scope_self(abi)


def _serve(sock: socket.socket, become: Become) -> NoReturn:
    reader = wire.Reader(sock)
    try:
        while not reader.closed:
            for _, fds in reader.read():
                standby = socket.socket(fileno=fds[0])
                try:
                    pid = _double_fork(standby, become)
                finally:
                    standby.close()
                wire.send(sock, {"pid": pid})
    finally:
        os._exit(0)


def _double_fork(standby: socket.socket, become: Become) -> int:
    """Fork a child that forks the standby and exits: the standby is re-parented to
    the supervisor.  Returns the standby's pid."""
    pid_r, pid_w = os.pipe2(os.O_CLOEXEC)
    middle = os.fork()
    if middle == 0:
        try:
            os.close(pid_r)
            child = os.fork()
            if child == 0:
                os.close(pid_w)
                become(standby)
            os.write(pid_w, str(child).encode())
        finally:
            os._exit(0)
    os.close(pid_w)
    data = b""
    while chunk := os.read(pid_r, 64):
        data += chunk
    os.close(pid_r)
    os.waitpid(middle, 0)
    return int(data)
