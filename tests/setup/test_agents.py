"""The real agents, started with the config ``toolhost setup`` wrote, offer toolhost's tools.

Each agent runs once in a scratch HOME whose config already holds a setting of the
user's (the scripted model as its provider), after ``toolhost setup AGENT`` (the console
script, as a user runs it). The scripted model's first request is the proof: toolhost's
tools are offered up front, and the agent's own edit, write and shell tools are not.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.helpers import run_agent
from tests.mcp.test_claude_code import claude, run_claude  # noqa: F401  (a fixture)
from tests.mcp.test_codex import codex, provider_config, run_codex  # noqa: F401
from tests.mcp.test_opencode import opencode, project_config, run_opencode  # noqa: F401
from tests.readme_snippets import snippet
from tests.scripted_anthropic import ScriptedAnthropic
from tests.scripted_anthropic import serve as serve_anthropic
from tests.scripted_anthropic import tool_names as anthropic_tools
from tests.scripted_gemini import ScriptedGemini, declared_functions, serve_gemini
from tests.scripted_model import Reply, ScriptedModel, serve, tool_names
from tests.scripted_responses import offered_tools, serve_responses

TOOLHOST = Path(sys.executable).with_name("toolhost")
DONE = "Nothing to do."


def setup_agent(
    agent: str,
    home: Path,
    env: dict[str, str] | None = None,
    *,
    name: str | None = None,
    cwd: Path | None = None,
) -> str:
    """The README's ``toolhost setup AGENT`` line (or its snippet ``name``), run as written
    (this checkout's toolhost) in ``cwd``."""
    words = shlex.split(snippet(name or f"setup-{agent}"))
    assert words[:3] == ["toolhost", "setup", agent], words
    done = subprocess.run(
        [str(TOOLHOST), *words[1:]],
        cwd=cwd,
        env={
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_claude_code_offers_toolhost_up_front_and_not_its_own_tools(
    claude: Path,  # noqa: F811
    home: Path,
    project: Path,
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["WebSearch"]}}))
    setup_agent("claude", home)
    for model in serve_anthropic(
        ScriptedAnthropic([Reply(DONE)], marker_tool="mcp__toolhost__edit")
    ):
        env = {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "sk-ant-scripted"}
        done = run_claude(claude, ["-p", "Say hi"], project, home, env=env)
        seen = [anthropic_tools(body) for body in model.other_requests]
        log = (done.stdout + done.stderr)[-4000:] + f"\nother requests offered: {seen}"
        assert done.returncode == 0 and done.stdout.strip() == DONE, log
        offered = set(anthropic_tools(model.requests[0]))
    assert {"mcp__toolhost__edit", "mcp__toolhost__write", "mcp__toolhost__bash"} <= offered
    assert not offered & {"Bash", "Edit", "Write", "Read", "NotebookEdit"}, sorted(offered)
    assert "ToolSearch" not in offered, sorted(offered)


def test_codex_offers_toolhost_and_not_its_shell_or_apply_patch(
    codex: Path,  # noqa: F811
    home: Path,
    project: Path,
) -> None:
    for model in serve_responses(ScriptedModel([Reply(DONE)])):
        config = home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(provider_config(model))
        setup_agent("codex", home)
        done = run_codex(
            codex, home, "exec", "--skip-git-repo-check", "--strict-config", "Say hi", cwd=project
        )
        log = (done.stdout + done.stderr)[-4000:]
        assert done.returncode == 0 and DONE in done.stdout, log
        offered = set(offered_tools(model.requests[0]))
    assert {"mcp__toolhost__edit", "mcp__toolhost__bash"} <= offered, sorted(offered)
    assert not offered & {"shell", "exec_command", "apply_patch", "write_stdin"}, sorted(offered)


def test_opencode_offers_toolhost_and_not_its_own_tools(
    opencode: Path,  # noqa: F811
    home: Path,
    project: Path,
) -> None:
    for model in serve(ScriptedModel([Reply(DONE)])):
        config = home / ".config" / "opencode" / "opencode.json"
        config.parent.mkdir(parents=True)
        mine = project_config(model)
        mine.pop("mcp")  # the user's own config: a provider, no toolhost yet
        config.write_text(json.dumps(mine))
        setup_agent("opencode", home)
        done = run_opencode(opencode, project, home, "Say hi")
        log = (done.stdout + done.stderr)[-4000:]
        assert done.returncode == 0 and DONE in done.stdout, log
        offered = set(tool_names(model.requests[0]))
    assert {"toolhost_edit", "toolhost_write", "toolhost_bash", "toolhost_read"} <= offered
    assert not offered & {"bash", "edit", "write", "read", "glob", "grep"}, sorted(offered)


GEMINI_VERSION = "0.61.0"


@pytest.fixture(scope="module")
def gemini() -> Path:
    from tests.mcp.helpers import npm_cli

    return npm_cli("@google/gemini-cli", GEMINI_VERSION, "gemini-cli", "gemini")


def run_gemini(gemini: Path, home: Path, project: Path, model: ScriptedGemini) -> str:
    """``gemini -p`` against the scripted model; headless, Gemini CLI offers no tool that
    would ask for confirmation (an MCP server's, its own edits and shell) unless told
    ``--approval-mode yolo``. Returns its output."""
    env = {
        **os.environ,
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": model.base_url,
        "GEMINI_API_KEY": "scripted-not-a-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # the folder trusted, as a person would
        "NO_COLOR": "1",
    }
    args = ["-p", "Say hi", "-m", "gemini-2.5-pro", "--approval-mode", "yolo"]
    done = run_agent(
        [str(gemini), *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0 and DONE in done.stdout, out[-3000:]
    return out


@pytest.mark.parametrize("set_up", [True, False], ids=["set-up", "defence-off"])
def test_gemini_cli_offers_toolhost_and_not_its_own_edit_write_or_shell(
    gemini: Path, home: Path, project: Path, set_up: bool
) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    if set_up:
        setup_agent("gemini", home)
    for model in serve_gemini(ScriptedGemini([Reply(DONE)])):
        run_gemini(gemini, home, project, model)
        offered = set(declared_functions(model.requests[0]))
    own = {"run_shell_command", "write_file", "replace", "read_file"}
    if not set_up:  # the same run without toolhost setup: Gemini's own tools are offered
        assert own <= offered, sorted(offered)
        return
    assert {"mcp_toolhost_edit", "mcp_toolhost_write", "mcp_toolhost_bash"} <= offered, offered
    assert "mcp_toolhost_glob" in offered, sorted(offered)  # not taken by Gemini's own glob
    assert not offered & own, sorted(offered)


def test_gemini_cli_set_up_for_the_project_offers_toolhost_there(
    gemini: Path, home: Path, project: Path
) -> None:
    """``toolhost setup gemini --project`` writes the folder's ``.gemini/settings.json``
    (the user's own settings untouched); Gemini CLI run in the folder offers toolhost's
    tools and not its own edit, write or shell."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    settings.write_text(mine)
    setup_agent("gemini", home, name="setup-gemini-project", cwd=project)
    assert settings.read_text() == mine
    assert "mcp_toolhost" not in mine and (project / ".gemini" / "settings.json").exists()
    for model in serve_gemini(ScriptedGemini([Reply(DONE)])):
        run_gemini(gemini, home, project, model)
        offered = set(declared_functions(model.requests[0]))
    assert {"mcp_toolhost_edit", "mcp_toolhost_write", "mcp_toolhost_bash"} <= offered, offered
    assert not offered & {"run_shell_command", "write_file", "replace", "read_file"}, offered
