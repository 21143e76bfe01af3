"""The agent behind ``toolhost acp`` ends with the proxy, all of it, however the proxy ends.

Agents from npm are often launchers: codex-acp's Node script starts the native
``codex-acp``, Gemini CLI starts itself again with a larger heap. The launcher is the
proxy's child; the process that speaks ACP (and the ``toolhost mcp`` it started) is
its child. A signal to the launcher alone (the proxy's SIGTERM at the end of a session,
or ``PR_SET_PDEATHSIG`` when the proxy is killed) ended the launcher and left the rest
running for good, parented to init.

So the agent starts in a session of its own (its own process group, which everything it
starts stays in unless it moves out), and the group is ended as a whole: SIGTERM to every
process of it, a grace of ``GRACE_SECONDS``, then SIGKILL to what is left. The proxy does
that itself when it ends on its own or on SIGTERM. For the end it cannot act on
(SIGKILL, a crash), a reaper waits beside it: a small process in a session of its own,
started with the agent, that blocks reading a pipe only the proxy holds open. However
the proxy ends, the pipe closes, and the reaper ends the group. A process the agent moved
out of its group (codex starts its MCP servers in groups of their own) is not signalled;
``toolhost mcp`` ends when the agent that started it closes its stdin, which its death
does.

Run as ``python -m server.acp.reaper GROUP`` with that pipe as stdin.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

GRACE_SECONDS = 1.0
POLL_SECONDS = 0.02


def group_alive(group: int) -> bool:
    """Whether any process is left in the process group ``group``."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal: still there
        return True
    return True


def end_group(group: int, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM to the whole group, then SIGKILL to whatever is left after ``grace``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


class Reaper:
    """The reaper of ``group``: ends it when ``release`` is called or this process ends."""

    def __init__(self, group: int) -> None:
        read, self._write = os.pipe()  # both ends close-on-exec: the agent gets neither
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.acp.reaper", str(group)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a signal to the proxy's group does not reach it
            )
        finally:
            os.close(read)

    def release(self) -> None:
        """The proxy has ended the group itself: the reaper only checks, and exits."""
        with contextlib.suppress(OSError):
            os.close(self._write)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(GRACE_SECONDS * 3)


def main(argv: list[str]) -> int:
    group = int(argv[1])
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)  # only the pipe's end ends it
    while os.read(0, 4096):
        pass
    end_group(group)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
