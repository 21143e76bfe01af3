"""OpenCode 1.18.33 itself as the MCP host of ``toolhost mcp``.

``opencode run`` in a temp project whose ``opencode.json`` is the README's snippet
(plus a provider for the scripted model), a scratch HOME, and a scripted
OpenAI-compatible model on 127.0.0.1 that calls ``toolhost_read`` then
``toolhost_edit``: the file changes on disk and each tool's result reaches the
model in the next request.

OpenCode is installed once with npm into ``~/.cache/toolhost-e2e/opencode-1.18.33``
(about 354 MB; ``$TOOLHOST_E2E_CACHE`` moves it).  The test skips only when npm is
missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.greeting import (
    AFTER,
    ANSWER,
    PROMPT,
    assert_tool_results,
    greet_file,
    read_then_edit,
)
from tests.mcp.helpers import E2E_CACHE, npm_install, run_agent, version_of
from tests.readme_snippets import snippet
from tests.scripted_model import ScriptedModel, serve, tool_names, tool_results

VERSION = "1.18.33"
HOME = E2E_CACHE / f"opencode-{VERSION}"
OPENCODE = HOME / "node_modules" / ".bin" / "opencode"
BIN = Path(sys.executable).parent  # where this toolhost's console script is


@pytest.fixture(scope="module")
def opencode() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("OpenCode is installed with npm, which is not on PATH")
    if shutil.which("rg") is None and not (BIN / "rg").exists():
        pytest.skip("OpenCode needs ripgrep (rg) on PATH")
    failure = npm_install(HOME, f"opencode-ai@{VERSION}", OPENCODE)
    assert failure is None, f"npm install opencode-ai failed:\n{failure}"
    assert version_of(OPENCODE) == VERSION
    return OPENCODE


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    yield from serve(ScriptedModel([]))


def opencode_env(project: Path, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PWD": str(project),  # OpenCode takes its directory from $PWD
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_DISABLE_MODELS_FETCH": "true",
        "OPENCODE_DISABLE_AUTOUPDATE": "true",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # `toolhost` as the README says
    }


def run_opencode(
    opencode: Path, project: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``opencode run -m scripted/scripted ARGS`` in ``project`` under the scratch ``home``."""
    return run_agent(
        [str(opencode), "run", "-m", "scripted/scripted", *args],
        cwd=project,
        env=opencode_env(project, home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def project_config(model: ScriptedModel) -> dict[str, object]:
    """The README's snippet, plus the scripted model as the provider."""
    config = json.loads(snippet("opencode"))
    config["provider"] = {
        "scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": model.base_url, "apiKey": "not-needed"},
            "models": {"scripted": {"name": "Scripted", "tool_call": True}},
        }
    }
    config["model"] = config["small_model"] = "scripted/scripted"
    return config


def test_opencode_calls_toolhost_read_and_edit_over_mcp(
    opencode: Path, model: ScriptedModel, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    target = greet_file(project)
    # The user's own OpenCode config (a project opencode.json would be the folder's own
    # config, which toolhost serves restricted until the folder is trusted).
    global_config = home / ".config" / "opencode" / "opencode.json"
    global_config.parent.mkdir(parents=True)
    global_config.write_text(json.dumps(project_config(model)))
    model.steps = read_then_edit("toolhost_", target)

    done = run_opencode(opencode, project, home, "--print-logs", PROMPT)
    log = done.stderr[-6000:]
    assert done.returncode == 0, log
    assert ANSWER in done.stdout
    assert target.read_text() == AFTER, log

    assert len(model.requests) == 3, log
    offered = tool_names(model.requests[0])
    assert {"toolhost_read", "toolhost_edit", "toolhost_bash", "toolhost_grep"} <= set(offered)
    assert_tool_results(tool_results(model.requests[1])[-1], tool_results(model.requests[2])[-1])
    schema = next(
        tool["function"]["parameters"]
        for tool in model.requests[0]["tools"]
        if tool["function"]["name"] == "toolhost_todowrite"
    )
    todos = schema["properties"]["todos"]
    assert todos["type"] == "array" and "enum" in json.dumps(todos["items"])
