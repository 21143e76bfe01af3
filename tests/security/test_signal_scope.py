"""No signal from a sandboxed command reaches a process it did not start: not the
editor, not the sidecar, not the supervisor (``tools.bash.sandbox.zygote``); nor does a
change of its priority, CPU affinity or limits (``tools.bash.sandbox.reach``).

The victim stands in for the editor or the sidecar: a process of this user outside
the sandbox.  With the defence off (``no-scope``: no shared Landlock signal scope) a
command freezes it with SIGSTOP, or kills the supervisor; with it on, both get
EPERM; with the reach filter off (``no-seccomp``) ``renice``, ``prlimit`` and
``taskset`` change the victim.  A server an earlier command left running can still be
ended, and a command still sets its own priority and limits.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.test_sandbox import OFF, bash, make_host
from tools.bash.sandbox import client, landlock, probe

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 6, reason="this kernel has no Landlock signal scope (ABI 6)"
)


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped, given a moment (a signal lands after kill returns)."""
    for _ in range(50):
        if state(pid) == "T":
            return True
        threading.Event().wait(0.01)
    return False


@pytest.fixture
def victim() -> Iterator[int]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_process_outside_cannot_be_stopped(
    worktree: Path, victim: int, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-scope")
    result = await bash(make_host(worktree), f"kill -STOP {victim}")
    sandbox = result.metadata["sandbox"]
    if defence == "off":
        assert stopped(victim), result.output  # the attack works
        assert any(m.startswith("signals:") for m in sandbox["missing"])
        return
    assert state(victim) in ("S", "R"), result.output
    assert "Operation not permitted" in result.output
    assert "signals" in sandbox["enforced"]


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_the_supervisor_cannot_be_killed(
    worktree: Path, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-scope")
    host = make_host(worktree)
    await bash(host, "true")
    supervisor = client.current()
    assert supervisor is not None
    result = await bash(host, "kill -9 $PPID")
    if defence == "off":
        supervisor.process.wait(timeout=5)  # the attack works: it is gone
        return
    assert supervisor.process.poll() is None, result.output
    assert "Operation not permitted" in result.output


async def test_a_server_an_earlier_command_left_can_still_be_ended(worktree: Path) -> None:
    host = make_host(worktree)
    await bash(host, "sleep 300 >/dev/null 2>&1 & echo $! > server.pid")
    pid = int((worktree / "server.pid").read_text())
    assert state(pid) in ("S", "R")
    result = await bash(host, "kill $(cat server.pid) && echo ended")
    assert "ended" in result.output, result.output
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists() or state(pid) == "Z":
            break
        await asyncio.sleep(0.02)
    assert not Path(f"/proc/{pid}").exists() or state(pid) == "Z"


async def test_mode_off_is_not_scoped(worktree: Path, victim: int) -> None:
    result = await bash(make_host(worktree, OFF), f"kill -STOP {victim}")
    assert stopped(victim), result.output
    assert result.metadata["sandbox"]["enforced"] == ["processes"]


def nice(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16]


REACH = {
    "renice": ("renice -n 19 -p {pid}", nice),
    "prlimit": (
        "prlimit --pid {pid} --cpu=0:1",
        lambda pid: Path(f"/proc/{pid}/limits").read_text(),
    ),
    "taskset": ("taskset -p 1 {pid}", lambda pid: str(os.sched_getaffinity(pid))),
}


@pytest.mark.parametrize("attack", list(REACH))
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_process_outside_keeps_its_priority_affinity_and_limits(
    worktree: Path, victim: int, attack: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-seccomp")  # no `reach` filter
    line, read = REACH[attack]
    before = read(victim)
    result = await bash(make_host(worktree), line.format(pid=victim))
    assert (read(victim) != before) == (defence == "off"), result.output
    if defence == "on":
        assert "Operation not permitted" in result.output


async def test_a_command_still_sets_its_own_priority_affinity_and_limits(worktree: Path) -> None:
    line = (
        "nice -n 5 sh -c 'cut -d\" \" -f19 /proc/$$/stat' && ionice -c3 true && "
        "taskset -c 0 true && (ulimit -n 64; ulimit -n) && prlimit --nofile=32 true && echo ok"
    )
    result = await bash(make_host(worktree), line)
    assert result.output.split()[:3] == ["5", "64", "ok"], result.output
