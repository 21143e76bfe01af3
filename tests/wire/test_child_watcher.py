"""The sidecar's loop learns of a child's exit through a pidfd, not a thread per child
(``server.children``): each rg of glob/grep/list otherwise started a ``waitpid`` thread.

Each case runs in its own interpreter, so the process-wide watcher it sets never
reaches the other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Starts a child from the running loop, and reports the threads alive while it runs,
# whether the process then holds a pidfd, and the child's exit code.
PROBE = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading

    from server.children import watch_children_by_pidfd

    def pidfds():
        found = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                found += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[pidfd]"
            except OSError:
                pass
        return found

    async def main():
        used = watch_children_by_pidfd() if sys.argv[1] == "pidfd" else False
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)",
            stdin=asyncio.subprocess.PIPE,
        )
        threads = [thread.name for thread in threading.enumerate()]
        held = pidfds()
        child.stdin.close()
        code = await asyncio.wait_for(child.wait(), 30)
        print(json.dumps({"used": used, "threads": threads, "pidfds": held, "code": code,
                          "after": pidfds()}))

    asyncio.run(main())
    """
)


def probe(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="3.12+ watches children by pidfd without being told"
)
@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd_open on this platform")
def test_a_child_is_watched_by_pidfd_without_a_thread() -> None:
    default = probe("default")
    assert default["threads"] == ["MainThread", "asyncio-waitpid-0"]  # the thread it replaces
    assert default["pidfds"] == 0 and default["code"] == 3

    watched = probe("pidfd")
    assert watched["used"] is True
    assert watched["threads"] == ["MainThread"]
    assert watched["pidfds"] == 1 and watched["code"] == 3
    assert watched["after"] == 0  # closed once the child is reaped
