"""``toolhost acp -- claude-agent-acp``: Zed's Claude Code adapter behind the proxy.

claude-agent-acp 0.23.1 (npm; it runs the Agent SDK's bundled Claude Code) against
the scripted Anthropic Messages API on 127.0.0.1.  The proxy sets
``_meta.claudeCode.options.tools`` to none of Claude Code's built-ins in
``session/new`` and ``ENABLE_TOOL_SEARCH=false``, so the model is offered toolhost's
tools up front and none of Claude Code's Bash/Edit/Write/Read; the two-file patch is
reviewed through toolhost's ``session/request_permission`` (claude-agent-acp also asks
its own permission for an MCP tool; those asks are answered and told apart by their
tool call id), and a rejection leaves the disk untouched and reaches the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.client import PATCH, AcpClient, readme_agent, stderr_of
from tests.acp.scenarios import ours, prompt_once
from tests.mcp.helpers import npm_cli
from tests.mcp.test_claude_code import claude_env
from tests.scripted_anthropic import ScriptedAnthropic, serve, tool_names, tool_results
from tests.scripted_model import Reply, ToolCall

VERSION = "0.23.1"
OWN_TOOLS = {"Bash", "Edit", "Write", "Read", "Glob", "Grep", "NotebookEdit", "MultiEdit"}


@pytest.fixture(scope="module")
def adapter() -> Path:
    return npm_cli(
        "@zed-industries/claude-agent-acp", VERSION, "claude-agent-acp", "claude-agent-acp"
    )


@pytest.fixture
def model() -> Iterator[ScriptedAnthropic]:
    yield from serve(ScriptedAnthropic([], marker_tool="mcp__toolhost__read"))


async def run(
    adapter: Path, project: Path, tmp_path: Path, model: ScriptedAnthropic, answer: str
) -> AcpClient:
    home = tmp_path / "home"
    home.mkdir()
    env = claude_env(
        home,
        {
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
            # Claude Code 2.1.83 refuses to start as root unless told it is sandboxed
            # (CI runs as root); nothing else changes with it.
            "IS_SANDBOX": "1",
        },
    )
    flags = ("--model", "openai/gpt-5")
    return await prompt_once(
        readme_agent("acp-claude", adapter), project, env, tmp_path, flags, answer
    )


async def test_claude_is_offered_toolhost_only_and_the_patch_is_reviewed(
    adapter: Path, model: ScriptedAnthropic, project: Path, tmp_path: Path
) -> None:
    model.steps = [ToolCall("mcp__toolhost__apply_patch", {"patchText": PATCH}), Reply("Done.")]
    client = await run(adapter, project, tmp_path, model, "allow_once")
    log = stderr_of(tmp_path)
    assert model.requests, log
    offered = set(tool_names(model.requests[0]))
    assert {"mcp__toolhost__apply_patch", "mcp__toolhost__bash"} <= offered, offered
    assert not offered & OWN_TOOLS, offered & OWN_TOOLS
    [review] = ours(client)
    paths = {item["path"] for item in review["toolCall"]["content"]}
    assert paths == {str(project / "a.py"), str(project / "b.py")}
    assert (project / "a.py").read_text() == "x = 2\n", log
    assert (project / "b.py").read_text() == "y = 1\n"


async def test_claude_rejected_patch_leaves_the_disk_and_the_model_is_told(
    adapter: Path, model: ScriptedAnthropic, project: Path, tmp_path: Path
) -> None:
    model.steps = [ToolCall("mcp__toolhost__apply_patch", {"patchText": PATCH}), Reply("OK.")]
    client = await run(adapter, project, tmp_path, model, "reject_once")
    assert len(ours(client)) == 1
    assert (project / "a.py").read_text() == "x = 1\n"
    assert not (project / "b.py").exists()
    assert "rejected" in tool_results(model.requests[1])[-1]
