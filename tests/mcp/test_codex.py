"""OpenAI's Codex CLI 0.171.0 itself as the MCP host of ``toolhost mcp``.

A scratch ``CODEX_HOME`` whose ``config.toml`` is the README's snippet (``toolhost``
found on PATH, as a user's shell would) plus a custom model provider: a scripted
model on 127.0.0.1 speaking the Responses API (``tests/scripted_responses.py``).
``codex mcp get`` shows the server as configured, and ``codex exec`` calls
toolhost's ``read`` then ``edit`` over MCP: the file changes on disk and each
tool's result reaches the model in the next request.  ``--strict-config`` makes
Codex refuse any key of the snippet (or of the test's additions) it does not know.

Codex is installed once with npm into ``~/.cache/toolhost-e2e/codex-0.171.0``
(about 420 MB, a native binary; ``$TOOLHOST_E2E_CACHE`` moves it).  The tests skip
when npm is missing or the install fails (no registry), saying which.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.greeting import (
    AFTER,
    ANSWER,
    PROMPT,
    assert_tool_results,
    greet_file,
    read_then_edit,
)
from tests.mcp.helpers import npm_cli, run_agent, version_of
from tests.readme_snippets import snippet
from tests.scripted_model import ScriptedModel
from tests.scripted_responses import function_outputs, offered_tools, serve_responses

VERSION = "0.171.0"
BIN = Path(sys.executable).parent  # where this toolhost's console script is


@pytest.fixture(scope="module")
def codex() -> Path:
    binary = npm_cli("@openai/codex", VERSION, "codex", "codex")
    assert version_of(binary) == f"codex-cli {VERSION}"
    return binary


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    yield from serve_responses(ScriptedModel([]))


def codex_env(home: Path, bin_dir: Path = BIN) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),  # where `~/.codex/config.toml` lives
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "NO_COLOR": "1",
        # `toolhost` found on PATH, as the README says
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def write_config(home: Path, before: str = "", after: str = "") -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"{before}\n{snippet('codex')}\n{after}\n")


def provider_config(model: ScriptedModel) -> str:
    """The scripted model as Codex's provider; Codex's own network chores switched off."""
    return f"""\
model = "scripted"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "Scripted"
base_url = "{model.base_url}"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
"""


def slow_toolhost(directory: Path, delay: float) -> Path:
    """A ``toolhost`` that takes ``delay`` seconds more to start, as on a loaded machine."""
    directory.mkdir(parents=True)
    shim = directory / "toolhost"
    shim.write_text(f'#!/bin/sh\nsleep {delay}\nexec "{BIN / "toolhost"}" "$@"\n')
    shim.chmod(0o755)
    return directory


def run_codex(
    codex: Path, home: Path, *args: str, cwd: Path, bin_dir: Path = BIN, timeout: float = 120
) -> Any:
    return run_agent(
        [str(codex), *args],
        cwd=cwd,
        env=codex_env(home, bin_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_codex_lists_the_readme_snippet_as_an_mcp_server(codex: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(home)
    done = run_codex(codex, home, "mcp", "get", "toolhost", "--json", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    server = json.loads(done.stdout)
    assert server["name"] == "toolhost" and server["enabled"] is True
    assert server["transport"]["type"] == "stdio"
    assert server["transport"]["command"] == "toolhost"
    assert server["transport"]["args"] == ["mcp"]

    listed = run_codex(codex, home, "mcp", "list", "--json", cwd=tmp_path, timeout=60)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert [entry["name"] for entry in json.loads(listed.stdout)] == ["toolhost"]


@pytest.mark.parametrize("start_delay", [0.0, 3.0], ids=["as-installed", "slow-start"])
def test_codex_exec_calls_toolhost_read_and_edit_over_mcp(
    codex: Path, model: ScriptedModel, tmp_path: Path, start_delay: float
) -> None:
    # slow-start: the snippet's `required = true` makes Codex wait for toolhost's tools.
    bin_dir = slow_toolhost(tmp_path / "bin", start_delay) if start_delay else BIN
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = greet_file(project)
    write_config(home, before=provider_config(model), after=snippet("codex-approve-edit"))
    model.steps = read_then_edit("mcp__toolhost__", target)

    done = run_codex(
        codex,
        home,
        "exec",
        "--json",
        "--strict-config",
        "--ephemeral",
        "-C",
        str(project),
        PROMPT,
        cwd=project,
        bin_dir=bin_dir,
    )
    log = done.stderr[-6000:]
    assert done.returncode == 0, log
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    items = [event["item"] for event in events if event.get("type") == "item.completed"]
    transcript = done.stdout[-3000:]

    assert len(model.requests) == 3, transcript
    offered = offered_tools(model.requests[0])  # already in the first turn
    assert {
        "mcp__toolhost__read",
        "mcp__toolhost__edit",
        "mcp__toolhost__bash",
        "mcp__toolhost__grep",
    } <= set(offered), offered
    calls = [item for item in items if item.get("type") == "mcp_tool_call"]
    assert [(call["server"], call["tool"], call["status"]) for call in calls] == [
        ("toolhost", "read", "completed"),
        ("toolhost", "edit", "completed"),
    ], transcript
    assert target.read_text() == AFTER, transcript
    assert_tool_results(
        function_outputs(model.requests[1])[-1], function_outputs(model.requests[2])[-1]
    )
    assert any(
        item.get("type") == "agent_message" and item.get("text") == ANSWER for item in items
    ), transcript
