"""``toolhost acp -- gemini --acp``: Gemini CLI 0.61.0 behind the proxy, for real.

Gemini CLI (npm) runs against the scripted Gemini API on 127.0.0.1
(``tests/scripted_gemini.py``).  The proxy hands it a policy file (``--policy``) that
denies its own shell, write, replace and read tools, and gives it toolhost over MCP: the
model is offered toolhost's tools (``mcp_toolhost_*``) and none of those, a two-file
patch is reviewed as one ``session/request_permission`` with both diffs, a rejection
leaves the disk as it was and the model reads why, and a command that writes outside
the project is stopped by toolhost's sandbox.  (Gemini CLI also asks its own
confirmation of an MCP call; those asks are answered and told apart by their tool call
id.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.client import PATCH, AcpClient, readme_agent, stderr_of
from tests.acp.scenarios import (
    assert_patch_reviewed_and_landed,
    assert_rejected,
    assert_sandboxed,
    patch_then_bash,
    prompt_once,
)
from tests.mcp.helpers import npm_cli
from tests.scripted_gemini import (
    ScriptedGemini,
    declared_functions,
    function_responses,
    serve_gemini,
)
from tests.scripted_model import Reply, ToolCall

VERSION = "0.61.0"
OWN_TOOLS = {"run_shell_command", "write_file", "replace", "read_file", "list_directory"}


@pytest.fixture(scope="module")
def gemini() -> Path:
    return npm_cli("@google/gemini-cli", VERSION, "gemini-cli", "gemini")


@pytest.fixture
def model() -> Iterator[ScriptedGemini]:
    yield from serve_gemini(ScriptedGemini([]))


def gemini_env(tmp_path: Path, model: ScriptedGemini) -> dict[str, str]:
    """A scratch HOME whose Gemini settings pick API-key auth, and the scripted API."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    return {
        **os.environ,
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": model.base_url,
        "GEMINI_API_KEY": "scripted-not-a-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # the folder trusted, as a person would
        "NO_COLOR": "1",
    }


async def run_gemini(
    gemini: Path,
    project: Path,
    tmp_path: Path,
    model: ScriptedGemini,
    answer: str = "allow_once",
    flags: tuple[str, ...] = ("--model", "openai/gpt-5"),  # toolhost offers apply_patch
) -> AcpClient:
    env = gemini_env(tmp_path, model)
    return await prompt_once(
        readme_agent("acp-gemini", gemini), project, env, tmp_path, flags, answer
    )


async def test_without_the_switch_gemini_offers_its_own_tools(
    gemini: Path, model: ScriptedGemini, project: Path, tmp_path: Path
) -> None:
    """The defence off: ``--keep-agent-tools`` and Gemini CLI offers its own beside ours."""
    model.steps = [Reply("Nothing to change.")]
    await run_gemini(gemini, project, tmp_path, model, flags=("--keep-agent-tools",))
    offered = set(declared_functions(model.requests[0]))
    assert offered >= OWN_TOOLS | {"mcp_toolhost_edit"}, offered


async def test_gemini_offers_only_toolhost_reviews_the_patch_and_sandboxes_bash(
    gemini: Path, model: ScriptedGemini, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "marker"
    model.steps = patch_then_bash("mcp_toolhost_", marker)
    client = await run_gemini(gemini, project, tmp_path, model)
    log = stderr_of(tmp_path)
    offered = set(declared_functions(model.requests[0]))
    assert {"mcp_toolhost_apply_patch", "mcp_toolhost_bash", "mcp_toolhost_glob"} <= offered
    assert not offered & OWN_TOOLS, offered & OWN_TOOLS
    assert_patch_reviewed_and_landed(client, project, log)
    assert_sandboxed(marker, function_responses(model.requests[2])[-1])
    assert len(model.requests) == 3, log


async def test_gemini_rejected_patch_leaves_the_disk_and_the_model_reads_why(
    gemini: Path, model: ScriptedGemini, project: Path, tmp_path: Path
) -> None:
    model.steps = [ToolCall("mcp_toolhost_apply_patch", {"patchText": PATCH}), Reply("OK.")]
    client = await run_gemini(gemini, project, tmp_path, model, "reject_once")
    told = function_responses(model.requests[1])[-1]
    assert_rejected(client, project, told, stderr_of(tmp_path))
