"""Nothing of the agent outlives ``toolhost acp``, however the proxy ends.

The agent here is shaped like codex-acp from npm (``tests/acp/launcher.py``): a launcher
whose child speaks ACP, starts ``toolhost mcp`` and does not exit when its stdin closes.
Before ``server.acp.reaper``, the proxy's SIGTERM (and PR_SET_PDEATHSIG, when the proxy
was killed) ended the launcher only: ``test_a_launcher_alone_leaves_its_agent`` shows that
leftover; through ``toolhost acp`` nothing with the test's mark is left, whether the
client closes the proxy's stdin, or the proxy gets SIGTERM or SIGKILL.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.acp.client import proxy
from tests.acp.leftovers import describe, kill_all, left_after, marked
from tests.acp.test_proxy import agent_env

SCRIPTED = [sys.executable, "-m", "tests.acp.scripted_agent"]
LAUNCHED = [sys.executable, "-m", "tests.acp.launcher", *SCRIPTED]


def marked_env(tmp_path: Path) -> tuple[dict[str, str], str]:
    mark = f"leftover-{secrets.token_hex(8)}"
    env = {**agent_env(tmp_path), "TOOLHOST_TEST_MARK": mark, "SCRIPTED_AGENT_STAYS": "1"}
    return env, mark


@pytest.mark.parametrize("ending", ["client-closes", "sigterm", "sigkill"])
async def test_the_agent_and_what_it_started_end_with_the_proxy(
    project: Path, tmp_path: Path, ending: str
) -> None:
    env, mark = marked_env(tmp_path)
    async with proxy(LAUNCHED, project, env, tmp_path) as client:
        await client.initialize()
        session = await client.new_session(project)
        steps = [{"mcp": "read", "args": {"filePath": str(project / "a.py")}}]
        result = await client.prompt(session, json.dumps(steps))
        assert result["stopReason"] == "end_turn"
        running = describe(marked(mark, str(tmp_path)))
        assert any("tests.acp.launcher" in line for line in running), running
        assert any("tests.acp.scripted_agent" in line for line in running), running
        assert any("toolhost mcp" in line for line in running), running
        if ending == "sigterm":
            client.process.terminate()
        elif ending == "sigkill":
            client.process.kill()
    left = left_after(mark, str(tmp_path), 10)
    named = describe(left)
    kill_all(left)
    assert not left, named


def test_a_launcher_alone_leaves_its_agent(tmp_path: Path) -> None:
    """The defence off: the agent started as the proxy started it before (a child that
    gets SIGTERM when its parent dies), the parent killed. The launcher goes; its child,
    the agent, stays."""
    env, mark = marked_env(tmp_path)
    parent = subprocess.Popen(
        [sys.executable, "-c", OLD_PROXY, *LAUNCHED], env=env, stdin=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while len(marked(mark, str(tmp_path))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # the old proxy's stand-in, the launcher, the agent
        parent.kill()
        parent.wait()
        left = left_after(mark, str(tmp_path), 3)
        assert any("tests.acp.scripted_agent" in line for line in describe(left)), describe(left)
        assert not any("tests.acp.launcher" in line for line in describe(left))
    finally:
        kill_all(marked(mark, str(tmp_path)))


# The agent started as toolhost acp started it before its process group: a child with
# PR_SET_PDEATHSIG, stdin a pipe held open by its parent.
OLD_PROXY = f"""
import ctypes, os, signal, subprocess, sys
def dies_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(1, {int(signal.SIGTERM)}, 0, 0, 0)
agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, preexec_fn=dies_with_parent)
agent.wait()
"""
