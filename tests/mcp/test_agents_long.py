"""Long commands through the real agents: what keeps a call alive, and what ends it.

Each agent runs ``toolhost mcp`` (behind ``wire_tap.py``, which records every line both
ways) against its scripted model on 127.0.0.1, with its tool timeout set low where it
can be set, so each test takes seconds; the mechanism is the one that applies at the
default. What each client does with progress (found in its bundle or source and checked
here; the table is in docs/protocol.md):

- OpenCode 1.18.33 restarts its timer (the MCP SDK's ``resetTimeoutOnProgress``) on each
  progress notification: with ``timeout: 3000``, a command quiet for 5 s completes, kept
  alive by toolhost's heartbeat. When OpenCode goes away (killed here) toolhost's stdin
  closes, and the command's tree is gone within a second. (Ctrl-C on ``opencode run``
  sometimes ended it at once, sometimes let the running call finish first: 3 runs of 5.)
- Claude Code 2.1.332 has a hard limit (``MCP_TOOL_TIMEOUT``, default 1e8 ms) that
  progress does not extend, and an idle limit (``CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT``,
  30 min for a stdio server, checked every 30 s) that progress restarts. With the idle
  limit at 2 s, a command quiet for 32 s completes. With the hard limit at 4 s, Claude
  Code sends ``notifications/cancelled`` and the tree is gone within a second of it.
- Codex 0.171.0 (``tool_timeout_sec``, default 300 s) and Gemini CLI 0.61.0 (``timeout``,
  default 600 s) keep a hard limit that progress does not extend (the heartbeat reaches
  them and the call is cut all the same): at the limit they send
  ``notifications/cancelled``, the tree is gone within a second, and the model reads the
  client's timeout. ``toolhost setup`` raises their limit for toolhost (bash keeps its own).

A command's tree is checked in the process table (``process_table.py``): its two ``sleep``
processes, one double-forked out of its process group, and its shell.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.helpers import TOOLHOST, npm_cli, run_agent
from tests.mcp.process_table import holding, long_command, sleepers
from tests.mcp.test_claude_code import claude, claude_env  # noqa: F401  (a fixture)
from tests.mcp.test_codex import codex, codex_env, provider_config  # noqa: F401
from tests.mcp.test_opencode import opencode, opencode_env, project_config  # noqa: F401
from tests.scripted_anthropic import ScriptedAnthropic, serve, tool_results
from tests.scripted_gemini import ScriptedGemini, function_responses, serve_gemini
from tests.scripted_model import Reply, ScriptedModel, ToolCall
from tests.scripted_model import serve as serve_chat
from tests.scripted_model import tool_results as chat_results
from tests.scripted_responses import function_outputs, serve_responses

TAP = Path(__file__).with_name("wire_tap.py")
END = "<end of input>"  # wire_tap.py's record of the agent closing its end
QUIET = "echo started; sleep {seconds}; echo finished-quietly"
FINISHED = "finished-quietly"


def tapped_server(log: Path) -> list[str]:
    """The command line that starts ``toolhost mcp`` behind the tap."""
    return [sys.executable, str(TAP), str(log), "--", str(TOOLHOST), "mcp"]


def wire(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def cancelled_at(log: Path) -> float | None:
    """When the agent sent ``notifications/cancelled``."""
    for entry in wire(log):
        message = entry["message"]
        if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
            return float(entry["at"])
    return None


def input_ended_at(log: Path) -> float | None:
    """When toolhost's stdin closed: the agent went away."""
    return next((float(e["at"]) for e in wire(log) if e["message"] == END), None)


def progress_heard(log: Path) -> list[str]:
    """The messages of the progress notifications toolhost sent the agent."""
    return [
        e["message"]["params"].get("message", "")
        for e in wire(log)
        if isinstance(e["message"], dict) and e["message"].get("method") == "notifications/progress"
    ]


class TreeWatch(threading.Thread):
    """Watches a ``long_command``'s processes: when both ``sleep``s run (then calls
    ``then``, if given), and when the last of its processes is gone (wall clock)."""

    def __init__(self, token: str, then: Any = None, within: float = 240) -> None:
        super().__init__(daemon=True)
        self.token, self.then, self.within = token, then, within
        self.running_at: float | None = None
        self.acted_at: float | None = None
        self.gone_at: float | None = None
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + self.within
        while len(sleepers(self.token)) < 2:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        self.running_at = time.time()
        if self.then is not None:
            self.acted_at = time.time()
            self.then()
        while holding(self.token):
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        self.gone_at = time.time()

    def result(self) -> tuple[float | None, float | None]:
        self.join(30)
        return self.running_at, self.gone_at


def assert_gone_within_a_second(watch: TreeWatch, since: float | None, log: Path) -> None:
    running, gone = watch.result()
    assert running is not None, f"the command never ran: {wire(log)[-5:]}"
    assert since is not None, f"no cancel reached toolhost: {wire(log)[-5:]}"
    assert running <= since, "cancelled before the command ran: the test proves nothing"
    assert gone is not None, f"still running: {holding(watch.token)}"
    assert gone - since < 1.0, f"the tree took {gone - since:.2f} s to go"


def bash_call(name: str, command: str) -> ToolCall:
    return ToolCall(name, {"command": command, "description": "A long command"})


# -- OpenCode -------------------------------------------------------------------------


def test_opencode_waits_for_a_quiet_command_and_its_end_ends_the_next(
    opencode: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    project, home, log = tmp_path / "project", tmp_path / "home", tmp_path / "wire.jsonl"
    project.mkdir()
    home.mkdir()
    command, token = long_command()
    for model in serve_chat(ScriptedModel([])):
        model.steps = [
            bash_call("toolhost_bash", QUIET.format(seconds=5)),  # its timeout is 3 s
            bash_call("toolhost_bash", command),
            Reply("done"),
        ]
        config = project_config(model)
        server = {"type": "local", "command": tapped_server(log), "timeout": 3000}
        config["mcp"] = {"toolhost": server}
        path = home / ".config" / "opencode" / "opencode.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(config))
        agent = subprocess.Popen(
            [str(opencode), "run", "-m", "scripted/scripted", "Run the tests"],
            cwd=project, env=opencode_env(project, home), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        watch = TreeWatch(token, then=partial(agent.send_signal, signal.SIGKILL))
        try:
            out, err = agent.communicate(timeout=240)
        finally:
            agent.kill()
        results = [chat_results(body)[-1] for body in model.requests[1:]]
    assert len(results) >= 1, (out + err)[-3000:]
    assert FINISHED in results[0], results[0]
    assert progress_heard(log).count("started") >= 3  # the line, then heartbeats
    # From when its end reached toolhost: a killed 400 MB process can take a moment to go.
    assert_gone_within_a_second(watch, input_ended_at(log), log)


# -- Claude Code ----------------------------------------------------------------------


def run_claude_bash(
    claude: Path,  # noqa: F811
    tmp_path: Path,
    command: str,
    env: dict[str, str],
    token: str | None = None,
) -> tuple[ScriptedAnthropic, Path, TreeWatch | None, subprocess.CompletedProcess[str]]:
    project, home, log = tmp_path / "project", tmp_path / "home", tmp_path / "wire.jsonl"
    project.mkdir()
    home.mkdir()
    server = {"type": "stdio", "command": tapped_server(log)[0], "args": tapped_server(log)[1:]}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"toolhost": server}}))
    watch = TreeWatch(token) if token is not None else None
    for model in serve(ScriptedAnthropic([], marker_tool="mcp__toolhost__bash")):
        model.steps = [bash_call("mcp__toolhost__bash", command), Reply("done")]
        extra = {
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
            "ENABLE_TOOL_SEARCH": "false",
            **env,
        }
        done = run_agent(
            [str(claude), "-p", "Run the tests", "--allowedTools", "mcp__toolhost__bash"],
            cwd=project, env=claude_env(home, extra), text=True, timeout=240,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
    return model, log, watch, done


def test_claude_code_idle_limit_waits_for_a_quiet_command(
    claude: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Claude Code checks its idle limit every 30 s: quiet past the first check.
    env = {"CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT": "2000"}
    model, log, _, done = run_claude_bash(claude, tmp_path, QUIET.format(seconds=32), env)
    log_text = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0 and len(model.requests) == 2, log_text
    assert FINISHED in tool_results(model.requests[1])[-1], tool_results(model.requests[1])
    assert progress_heard(log).count("started") >= 25


def test_claude_code_hard_limit_cancels_and_the_tree_ends_within_a_second(
    claude: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    command, token = long_command()
    env = {"MCP_TOOL_TIMEOUT": "10000"}  # it bounds the MCP handshake too: not lower
    model, log, watch, done = run_claude_bash(claude, tmp_path, command, env, token)
    assert watch is not None
    assert done.returncode == 0 and len(model.requests) == 2, (done.stdout + done.stderr)[-3000:]
    assert "timed out after 10s" in tool_results(model.requests[1])[-1]
    assert_gone_within_a_second(watch, cancelled_at(log), log)


# -- Codex ----------------------------------------------------------------------------


def test_codex_cuts_at_its_limit_whatever_the_progress_and_the_tree_ends(
    codex: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    project, home, log = tmp_path / "project", tmp_path / "home", tmp_path / "wire.jsonl"
    project.mkdir()
    command, token = long_command()
    watch = TreeWatch(token)
    for model in serve_responses(ScriptedModel([])):
        model.steps = [bash_call("mcp__toolhost__bash", command), Reply("done")]
        server = tapped_server(log)
        config = home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(
            provider_config(model)
            + f"\n[mcp_servers.toolhost]\ncommand = {json.dumps(server[0])}\n"
            + f"args = {json.dumps(server[1:])}\nrequired = true\ntool_timeout_sec = 4\n"
            + '\n[mcp_servers.toolhost.tools.bash]\napproval_mode = "approve"\n'
        )
        done = run_agent(
            [str(codex), "exec", "--skip-git-repo-check", "Run the tests"],
            cwd=project, env=codex_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, timeout=240, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0 and len(model.requests) == 2, done.stderr[-3000:]
    assert "timed out awaiting tools/call after 4s" in function_outputs(model.requests[1])[-1]
    assert progress_heard(log).count("started") >= 2  # heard, and cut all the same
    assert_gone_within_a_second(watch, cancelled_at(log), log)


# -- Gemini CLI -----------------------------------------------------------------------

GEMINI_VERSION = "0.61.0"


@pytest.fixture(scope="module")
def gemini() -> Path:
    return npm_cli("@google/gemini-cli", GEMINI_VERSION, "gemini-cli", "gemini")


@pytest.fixture
def gemini_model() -> Iterator[ScriptedGemini]:
    yield from serve_gemini(ScriptedGemini([]))


def test_gemini_cuts_at_its_limit_whatever_the_progress_and_the_tree_ends(
    gemini: Path, gemini_model: ScriptedGemini, tmp_path: Path
) -> None:
    project, home, log = tmp_path / "project", tmp_path / "home", tmp_path / "wire.jsonl"
    project.mkdir()
    (home / ".gemini").mkdir(parents=True)
    command, token = long_command()
    server = tapped_server(log)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "mcpServers": {"toolhost": {"command": server[0], "args": server[1:], "timeout": 4000}},
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    gemini_model.steps = [bash_call("mcp_toolhost_bash", command), Reply("done")]
    watch = TreeWatch(token)
    env = {
        **os.environ,
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": gemini_model.base_url,
        "GEMINI_API_KEY": "scripted-not-a-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
    }
    done = run_agent(
        [str(gemini), "-p", "Run the tests", "-m", "gemini-2.5-pro", "--approval-mode", "yolo"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0 and len(gemini_model.requests) == 2, done.stderr[-3000:]
    assert "Request timed out" in function_responses(gemini_model.requests[1])[-1]
    assert progress_heard(log).count("started") >= 2  # heard, and cut all the same
    assert_gone_within_a_second(watch, cancelled_at(log), log)
