"""How the event loop learns that a child process (rg, a bash command) has ended.

Python 3.11's default, ``ThreadedChildWatcher``, starts a thread per child that blocks
in ``waitpid`` and then wakes the loop from that thread: every ``glob``, ``grep``,
``list`` and ``bash`` call paid a thread start and a cross-thread wake-up (about 80 µs
per rg on the benchmark machine, bench/README.md). A pidfd is a file descriptor that
becomes readable when its process exits, so the loop waits for it like any other fd.

Python 3.12 picks the pidfd watcher by itself where the kernel allows it (and deprecates
choosing one), so this only acts on 3.11. 3.11's ``PidfdChildWatcher`` reports every
child to the loop it is attached to: that is right here because the sidecar and the
MCP door each run one loop, in the main thread, and start every child from it.
"""

from __future__ import annotations

import asyncio
import os
import sys


def watch_children_by_pidfd() -> bool:
    """On Python 3.11 with pidfds, the running loop watches children through them.

    Called from the main thread's running loop. False (and the default kept) on 3.12+,
    or where the kernel (before 5.3) or a seccomp filter refuses ``pidfd_open``.
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    watcher = asyncio.PidfdChildWatcher()
    asyncio.set_child_watcher(watcher)
    watcher.attach_loop(asyncio.get_running_loop())
    return True
