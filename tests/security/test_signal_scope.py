"""No signal from a sandboxed command reaches a process it did not start: not the
editor, not the sidecar, not the supervisor (``tools.bash.sandbox.zygote``).

The victim stands in for the editor or the sidecar: a process of this user outside
the sandbox.  With the defence off (``no-scope``: no shared Landlock signal scope) a
command freezes it with SIGSTOP, or kills the supervisor; with it on, both get
EPERM.  A server an earlier command left running can still be ended.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
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
        assert state(victim) == "T", result.output  # the attack works
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
    assert state(victim) == "T", result.output
    assert result.metadata["sandbox"]["enforced"] == ["processes"]
