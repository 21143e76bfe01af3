"""``toolhost acp -- codex-acp``: Zed's Codex adapter behind the proxy.

codex-acp 0.16.0 (npm; a Rust binary in its platform package) against the scripted
Responses API on 127.0.0.1.  The proxy adds ``-c features.shell_tool=false -c
features.unified_exec=false -c features.apply_patch_freeform=false -c
include_apply_patch_tool=false``: the model is offered toolhost's tools (Codex's
``mcp__toolhost`` namespace) and no shell or apply_patch of Codex's own.  A two-file
patch is reviewed as one ``session/request_permission`` with both diffs, a rejection
leaves the disk as it was and the model reads why, and a command that writes outside
the project is stopped by toolhost's sandbox.  (codex-acp also asks its own approval
of an MCP call; those asks are answered and told apart by their tool call id.)
"""

from __future__ import annotations

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
from tests.mcp.test_codex import codex_env, provider_config
from tests.scripted_model import Reply, ScriptedModel, ToolCall
from tests.scripted_responses import function_outputs, offered_tools, serve_responses

VERSION = "0.16.0"
OWN_TOOLS = {"shell", "shell_command", "exec_command", "write_stdin", "apply_patch"}


@pytest.fixture(scope="module")
def adapter() -> Path:
    return npm_cli("@zed-industries/codex-acp", VERSION, "codex-acp", "codex-acp")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    yield from serve_responses(ScriptedModel([]))


async def test_without_the_switch_codex_offers_its_own_shell(
    adapter: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    """The defence off: ``--keep-agent-tools`` and Codex offers its own shell beside ours
    (with the switch on, the patch test below checks that it does not)."""
    model.steps = [Reply("Nothing to change.")]
    await run_codex(adapter, project, tmp_path, model, "allow_once", ("--keep-agent-tools",))
    offered = set(offered_tools(model.requests[0]))
    assert {"mcp__toolhost__edit", "mcp__toolhost__bash"} <= offered, offered
    assert offered & OWN_TOOLS, offered


async def run_codex(
    adapter: Path,
    project: Path,
    tmp_path: Path,
    model: ScriptedModel,
    answer: str,
    flags: tuple[str, ...] = ("--model", "openai/gpt-5"),  # toolhost offers apply_patch
) -> AcpClient:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(provider_config(model))
    env = {**codex_env(home), "OPENAI_API_KEY": "sk-scripted-not-a-key"}
    return await prompt_once(
        readme_agent("acp-codex", adapter), project, env, tmp_path, flags, answer
    )


async def test_codex_offers_only_toolhost_reviews_the_patch_and_sandboxes_bash(
    adapter: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "marker"
    model.steps = patch_then_bash("mcp__toolhost__", marker)
    client = await run_codex(adapter, project, tmp_path, model, "allow_once")
    log = stderr_of(tmp_path)
    offered = set(offered_tools(model.requests[0]))
    assert {"mcp__toolhost__apply_patch", "mcp__toolhost__bash"} <= offered, offered
    assert not offered & OWN_TOOLS, offered & OWN_TOOLS
    assert_patch_reviewed_and_landed(client, project, log)
    assert_sandboxed(marker, function_outputs(model.requests[2])[-1])
    assert len(model.requests) == 3, log


async def test_codex_rejected_patch_leaves_the_disk_and_the_model_reads_why(
    adapter: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    model.steps = [ToolCall("mcp__toolhost__apply_patch", {"patchText": PATCH}), Reply("OK.")]
    client = await run_codex(adapter, project, tmp_path, model, "reject_once")
    told = function_outputs(model.requests[1])[-1]
    assert_rejected(client, project, told, stderr_of(tmp_path))
