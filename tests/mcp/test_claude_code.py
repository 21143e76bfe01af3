"""Claude Code 2.1.332 itself as the MCP host of ``toolhost mcp``.

The README's ``claude mcp add`` line, run as written in a temp project under a
scratch HOME (the venv's ``bin`` first on PATH, so ``toolhost`` is this checkout's).
``claude mcp list`` then starts ``toolhost mcp`` and reports it connected only after
an MCP handshake; ``claude -p`` against a scripted Anthropic Messages API on
127.0.0.1 (``tests/scripted_anthropic.py``) calls ``mcp__toolhost__read`` then
``mcp__toolhost__edit``: the file changes on disk and each tool's result reaches the
model in the next request.  Without ``--allowedTools`` the edit is refused.

Claude Code is installed once with npm into
``~/.cache/toolhost-e2e/claude-code-2.1.332`` (a ~400 MB native binary from the
platform package; ``$TOOLHOST_E2E_CACHE`` moves it).  The test skips only when npm
is missing or the install fails (the reason says which).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.greeting import (
    AFTER,
    ANSWER,
    BEFORE,
    PROMPT,
    assert_tool_results,
    edit_call,
    greet_file,
    read_then_edit,
)
from tests.mcp.helpers import npm_cli, run_agent, version_of
from tests.readme_snippets import snippet
from tests.scripted_anthropic import ScriptedAnthropic, serve, tool_names, tool_results
from tests.scripted_model import Reply, ToolCall

VERSION = "2.1.332"
BIN = Path(sys.executable).parent  # where this toolhost's console script is


@pytest.fixture(scope="module")
def claude() -> Path:
    binary = npm_cli("@anthropic-ai/claude-code", VERSION, "claude-code", "claude")
    version = version_of(binary)
    assert version.split()[0] == VERSION, version
    return binary


def claude_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A scratch HOME and nothing of the user's Claude setup; no traffic but the model's."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "CLAUDE_", "CLAUDECODE"))
    }
    return {
        **env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCP_TIMEOUT": "60000",  # ms for `toolhost mcp` to start, on a loaded machine
        # Claude Code connects MCP servers in the background by default, so on a loaded
        # machine its first request could go out before toolhost's tools were listed.
        "MCP_CONNECTION_NONBLOCKING": "false",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # `toolhost` as the README says
        **(extra or {}),
    }


def run_claude(
    claude: Path,
    args: list[str],
    project: Path,
    home: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    return run_agent(
        [str(claude), *args],
        cwd=project,
        env=claude_env(home, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def add_toolhost(claude: Path, project: Path, home: Path) -> None:
    """The README's ``claude mcp add`` line, exactly as written."""
    words = shlex.split(snippet("claude"))
    assert words[:3] == ["claude", "mcp", "add"], words
    added = run_claude(claude, words[1:], project, home)
    assert added.returncode == 0, added.stdout + added.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_readme_claude_mcp_add_then_list_reports_toolhost_connected(
    claude: Path, project: Path, home: Path
) -> None:
    add_toolhost(claude, project, home)

    listed = run_claude(claude, ["mcp", "list"], project, home)
    out = listed.stdout + listed.stderr
    assert listed.returncode == 0, out
    line = next((row for row in out.splitlines() if row.startswith("toolhost:")), "")
    assert line == "toolhost: toolhost mcp - ✔ Connected", out


def test_readme_scope_project_writes_mcp_json_that_waits_for_approval(
    claude: Path, project: Path, home: Path
) -> None:
    # The README's `--scope project` variant: the server goes into the folder's
    # .mcp.json for the team, and Claude Code starts it only once a person approves it.
    words = shlex.split(snippet("claude"))
    added = run_claude(claude, [*words[1:3], "--scope", "project", *words[3:]], project, home)
    assert added.returncode == 0, added.stdout + added.stderr
    shared = json.loads((project / ".mcp.json").read_text())
    assert shared["mcpServers"]["toolhost"] | {"env": {}} == {
        "type": "stdio",
        "command": "toolhost",
        "args": ["mcp"],
        "env": {},
    }
    listed = run_claude(claude, ["mcp", "list"], project, home)
    line = next((r for r in listed.stdout.splitlines() if r.startswith("toolhost:")), "")
    assert "Pending approval" in line, listed.stdout + listed.stderr


def test_claude_mcp_list_reports_a_server_that_speaks_no_mcp_as_failed(
    claude: Path, project: Path, home: Path
) -> None:
    # The counterpart that shows "Connected" is earned by the handshake, not by a
    # process that merely starts: `toolhost --help` runs and exits 0, speaking no MCP.
    added = run_claude(claude, ["mcp", "add", "mute", "--", "toolhost", "--help"], project, home)
    assert added.returncode == 0, added.stdout + added.stderr
    listed = run_claude(claude, ["mcp", "list"], project, home)
    line = next((r for r in listed.stdout.splitlines() if r.startswith("mute:")), "")
    assert line.startswith("mute: toolhost --help - ") and "Connected" not in line, (
        listed.stdout + listed.stderr
    )


@pytest.fixture
def model() -> Iterator[ScriptedAnthropic]:
    yield from serve(ScriptedAnthropic([], marker_tool="mcp__toolhost__read"))


def model_env(model: ScriptedAnthropic, *, tool_search: bool = False) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
        # By default Claude Code offers MCP tools only behind its ToolSearch tool, for the
        # model to load on demand; off, they are offered up front like its own tools.
        "ENABLE_TOOL_SEARCH": "true" if tool_search else "false",
    }


ALLOWED = "mcp__toolhost__read,mcp__toolhost__edit"


def run_claude_edit(
    claude: Path, project: Path, home: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``claude -p`` with toolhost's read and edit allowed; it must answer ``ANSWER``."""
    done = run_claude(claude, ["-p", PROMPT, "--allowedTools", ALLOWED], project, home, env=env)
    log = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, log
    assert done.stdout.strip() == ANSWER, log
    return done


def test_claude_p_calls_toolhost_read_and_edit_over_mcp(
    claude: Path, project: Path, home: Path, model: ScriptedAnthropic
) -> None:
    target = greet_file(project)
    add_toolhost(claude, project, home)
    model.steps = read_then_edit("mcp__toolhost__", target)

    done = run_claude_edit(claude, project, home, model_env(model))
    log = (done.stdout + done.stderr)[-6000:]
    assert target.read_text() == AFTER, log

    assert len(model.requests) == 3, log
    offered = set(tool_names(model.requests[0]))
    assert {"mcp__toolhost__read", "mcp__toolhost__edit", "mcp__toolhost__grep"} <= offered
    assert_tool_results(tool_results(model.requests[1])[-1], tool_results(model.requests[2])[-1])


def test_claude_p_with_default_tool_search_loads_toolhost_tools_then_edits(
    claude: Path, project: Path, home: Path, model: ScriptedAnthropic
) -> None:
    # Claude Code's default: the toolhost tools are only named (as deferred tools) until
    # the model loads them with ToolSearch; then their schemas, from toolhost's
    # tools/list, are offered and the calls go through MCP as before.
    target = greet_file(project)
    add_toolhost(claude, project, home)
    model.marker_tool = "ToolSearch"
    model.steps = [
        ToolCall("ToolSearch", {"query": f"select:{ALLOWED}"}),
        *read_then_edit("mcp__toolhost__", target),
    ]

    done = run_claude_edit(claude, project, home, model_env(model, tool_search=True))
    log = (done.stdout + done.stderr)[-6000:]
    assert target.read_text() == AFTER, log

    assert len(model.requests) == 4, log
    first = model.requests[0]
    assert not any(name.startswith("mcp__toolhost__") for name in tool_names(first))
    assert "mcp__toolhost__read" in json.dumps(first), "not even named as a deferred tool"
    loaded = {tool["name"]: tool for tool in model.requests[1]["tools"]}
    assert {"mcp__toolhost__read", "mcp__toolhost__edit"} <= set(loaded), sorted(loaded)
    edit_schema = loaded["mcp__toolhost__edit"]["input_schema"]
    assert {"filePath", "oldString", "newString"} <= set(edit_schema["properties"])
    assert_tool_results(tool_results(model.requests[2])[-1], tool_results(model.requests[3])[-1])


def test_claude_p_without_allowed_tools_does_not_let_the_edit_through(
    claude: Path, project: Path, home: Path, model: ScriptedAnthropic
) -> None:
    # Without --allowedTools, print mode cannot ask anyone, so Claude Code refuses the
    # MCP call itself and toolhost never runs it: the file keeps its text.
    target = greet_file(project)
    add_toolhost(claude, project, home)
    model.steps = [edit_call("mcp__toolhost__edit", target), Reply("I was not allowed to edit.")]

    done = run_claude(claude, ["-p", PROMPT], project, home, env=model_env(model))
    log = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, log
    assert target.read_text() == BEFORE, log
    assert len(model.requests) == 2, log
    refusal = tool_results(model.requests[1])[-1]
    assert "Edit applied" not in refusal and "permission" in refusal.lower(), refusal
