"""What runs in the supervisor's forked child, between fork and exec.

The supervisor is single-threaded, so the child may do more than a fork from the
sidecar safely could: new namespaces, mounts, the seccomp filter, Landlock. Every
step that fails is reported through ``status`` (a close-on-exec pipe: it closes
empty when exec succeeds) and the child exits 127; nothing runs half-sandboxed.

Order: a new session; default signal dispositions; namespaces and mounts (they
must come before Landlock, which forbids mounting); for the domain lists, the
loopback listener handed to the supervisor (``PROXY_TAG`` first on ``channel``) and
the proxy variables; seccomp (``reach``, the network filter, the capture filter);
Landlock, and its second layer (``creations``); child
subreaper (orphans of the command stay its descendants while it runs); death
signal when the supervisor dies; the standard descriptors; exec.
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Mapping, Sequence

from tools.bash.sandbox import landlock, namespaces, notify, seccomp
from tools.bash.sandbox.plan import Plan
from tools.bash.sandbox.syscalls import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, prctl

EXEC_FAILED = 127
PROXY_TAG = b"net:"  # the first message on the channel when the plan has a proxy

# What clients read to find a proxy; the inherited NO_PROXY goes (a host it names would
# be tried directly, and there is no direct way out). Node 24+ needs NODE_USE_ENV_PROXY.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
SOCKS_VARIABLES = ("ALL_PROXY", "all_proxy")
CLEARED_VARIABLES = ("NO_PROXY", "no_proxy")

# Python ignores SIGPIPE and SIGXFSZ; the supervisor handles these. A command
# starts with every one at its default.
_RESET = (
    signal.SIGPIPE,
    signal.SIGXFSZ,
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGCHLD,
)


def run(
    plan: Plan,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    stdin: int,
    stdout: int,
    status: int,
    *,
    ruleset_fd: int,
    seccomp_code: bytes | None,
    supervisor: int,
    capture_code: bytes | None = None,
    reach_code: bytes | None = None,
    channel: int = -1,
    creations_fd: int = -1,
) -> None:
    """Never returns: execs ``argv`` or exits 127 after writing what failed to ``status``.

    ``capture_code``: the filter whose listener goes to the supervisor (``notify``);
    ``creations_fd``: the second Landlock layer (``creations``), enforced only when
    that listener is in place (else no new name could be made in the project at all)."""
    step = "setsid"
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for number in _RESET:
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if plan.engine == "landlock":
            if plan.namespaces:
                step = "namespaces"
                namespaces.enter(os.getuid(), os.getgid(), network=plan.netns)
                step = "mounts"
                namespaces.writable_only(plan.writable)
                for path in plan.pinned:
                    namespaces.pin(path)
                for path in plan.protected:
                    namespaces.read_only(path)
                for path in plan.hidden:
                    namespaces.hide(path)
                if plan.proxy:
                    step = "proxy"
                    env = proxy_env(env, _hand_over_listener(channel))
            if reach_code is not None:
                step = "seccomp"
                seccomp.install(reach_code)
            if seccomp_code is not None:
                step = "seccomp"
                seccomp.install(seccomp_code)
            listening = capture_code is not None and _capture(capture_code, channel)
            step = "landlock"
            shared = plan.namespaces and os.path.isdir(namespaces.SHARED_MEMORY)
            if shared:
                landlock.allow(ruleset_fd, namespaces.SHARED_MEMORY, plan.landlock_abi)
            landlock.enforce(ruleset_fd, plan.landlock_abi)
            if creations_fd >= 0 and listening:
                if shared:
                    landlock.allow_making(creations_fd, namespaces.SHARED_MEMORY)
                landlock.enforce(creations_fd, plan.landlock_abi)
        elif plan.engine == "bwrap":
            if plan.proxy:  # bubblewrap runs inside this network namespace, not its own
                step = "namespaces"
                namespaces.enter(os.getuid(), os.getgid(), network=True)
                step = "proxy"
                env = proxy_env(env, _hand_over_listener(channel))
            if reach_code is not None:
                step = "seccomp"
                seccomp.install(reach_code)
            if capture_code is not None:
                _capture(capture_code, channel)
        step = "prctl"
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != supervisor:  # it died before the death signal was set
            os._exit(EXEC_FAILED)
        step = "descriptors"
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(stdout, 2)
        step = "chdir"
        os.chdir(cwd)
        step = "exec"
        os.execve(argv[0], list(argv), dict(env))
    except BaseException as error:  # whatever it is, report it and exit
        try:
            os.write(status, f"{step}: {error}".encode(errors="replace")[:4000])
        finally:
            os._exit(EXEC_FAILED)


def proxy_env(env: Mapping[str, str], port: int) -> dict[str, str]:
    """The command's environment with toolhost's proxy (on 127.0.0.1:``port``) set."""
    found = {k: v for k, v in env.items() if k not in CLEARED_VARIABLES}
    found.update(dict.fromkeys(PROXY_VARIABLES, f"http://127.0.0.1:{port}"))
    found.update(dict.fromkeys(SOCKS_VARIABLES, f"socks5h://127.0.0.1:{port}"))
    found["NODE_USE_ENV_PROXY"] = "1"
    return found


def _hand_over_listener(channel: int) -> int:
    """Listen on this namespace's loopback and send the socket to the supervisor (which
    passes it to the sidecar's proxy); the port it listens on."""
    listener = namespaces.loopback_listener()
    sock = socket.socket(fileno=os.dup(channel))
    try:
        socket.send_fds(sock, [PROXY_TAG], [listener.fileno()])
        return int(listener.getsockname()[1])
    finally:
        sock.close()
        listener.close()


def _capture(code: bytes, channel: int) -> bool:
    """Install the filter and hand its listener to the supervisor; a filter that cannot
    be installed (a listener already exists: a nested toolhost, whose commands the outer
    supervisor's filter still stops) is said, and the command runs unrecorded (its
    turn's closing scan still sees its changes). Whether the listener is in place."""
    sock = socket.socket(fileno=os.dup(channel))
    try:
        try:
            listener = notify.install(code)
        except OSError as error:
            sock.sendall(f"no:{error.strerror or error}".encode()[:500])
            return False
        socket.send_fds(sock, [b"ok"], [listener])
        os.close(listener)
        return True
    finally:
        sock.close()


def proxy_listener(sock: socket.socket) -> int | None:
    """In the supervisor: the loopback listener the child sent before it exec'd
    (``PROXY_TAG``)."""
    sock.setblocking(False)
    try:
        data, fds, _, _ = socket.recv_fds(sock, len(PROXY_TAG), 1)
    except (BlockingIOError, OSError):
        return None
    for extra in fds[1:]:
        os.close(extra)
    if data == PROXY_TAG and fds:
        os.set_inheritable(fds[0], False)
        return fds[0]
    for fd in fds:
        os.close(fd)
    return None


def listener(sock: socket.socket) -> int | str:
    """In the supervisor: what the child said of its filter (``_capture``; it has
    exec'd: its word is in the socket already): the listener fd, or why there is none."""
    sock.setblocking(False)
    try:
        data, fds, _, _ = socket.recv_fds(sock, 512, 1)
    except (BlockingIOError, OSError):
        return "the command's capture filter did not report"
    for extra in fds[1:]:
        os.close(extra)
    if fds and data == b"ok":
        os.set_inheritable(fds[0], False)
        return fds[0]
    for fd in fds:
        os.close(fd)
    text = data.decode(errors="replace")
    return text.removeprefix("no:") or "the command's capture filter did not report"
