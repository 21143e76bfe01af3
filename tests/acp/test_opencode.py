"""``toolhost acp -- opencode acp``: OpenCode 1.18.33 behind the proxy, for real.

OpenCode runs against the scripted OpenAI-compatible model on 127.0.0.1.  The proxy
turns OpenCode's own file and shell tools off (its ``tools`` config, through
``OPENCODE_CONFIG_CONTENT``) and gives it toolhost over MCP: the model is offered
toolhost's tools and none of OpenCode's own, a two-file patch is reviewed as one
``session/request_permission`` with both diffs, a rejection leaves the disk as it was
and the model reads toolhost's rejection, and a command runs in toolhost's sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp.client import PATCH, AcpClient, proxy, readme_agent, stderr_of, zed_agent
from tests.acp.schema import validate_sent
from tests.mcp.helpers import npm_install
from tests.mcp.test_opencode import HOME, OPENCODE, VERSION, opencode_env
from tests.scripted_model import Reply, ScriptedModel, ToolCall, serve, tool_names, tool_results

OWN_TOOLS = {"bash", "edit", "write", "read", "glob", "grep", "list", "patch", "multiedit"}
OWN_TOOLS |= {"apply_patch"}


@pytest.fixture(scope="module")
def opencode() -> Path:
    failure = npm_install(HOME, f"opencode-ai@{VERSION}", OPENCODE)
    assert failure is None, f"npm install opencode-ai failed:\n{failure}"
    return OPENCODE


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    yield from serve(ScriptedModel([]))


def configured_home(tmp_path: Path, model: ScriptedModel) -> Path:
    """A scratch HOME whose OpenCode config knows the scripted model and nothing else."""
    home = tmp_path / "home"
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "scripted": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": model.base_url, "apiKey": "not-needed"},
                        "models": {"gpt-5": {"name": "Scripted", "tool_call": True}},
                    }
                },
                "model": "scripted/gpt-5",
                "small_model": "scripted/gpt-5",
            }
        )
    )
    return home


async def prompt_opencode(
    opencode: Path,
    project: Path,
    tmp_path: Path,
    model: ScriptedModel,
    agent: list[str] | None = None,
    **options: Any,
) -> AcpClient:
    env = opencode_env(project, configured_home(tmp_path, model))
    flags = ("--model", "openai/gpt-5")
    command = agent or readme_agent("acp-opencode", opencode)
    async with proxy(command, project, env, tmp_path, options=flags, **options) as client:
        await client.initialize()
        session = await client.new_session(project)
        answer = await client.prompt(session, "Change x and add y")
        assert answer["stopReason"] == "end_turn", stderr_of(tmp_path)
    validate_sent(client.sent())
    return client


def not_a_rerun(params: dict[str, Any]) -> str | None:
    """Allow everything but the bash tool's offer to run a command again with more access."""
    return "reject_once" if "run again" in params["toolCall"]["title"] else "allow_once"


async def test_opencode_offers_only_toolhost_and_every_change_is_reviewed(
    opencode: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "marker"
    model.steps = [
        ToolCall("toolhost_apply_patch", {"patchText": PATCH}),
        ToolCall(
            "toolhost_bash",
            {"command": f"sh -c 'echo pwned > {marker}'", "description": "write outside"},
        ),
        Reply("Done."),
    ]
    client = await prompt_opencode(opencode, project, tmp_path, model, choose=not_a_rerun)
    log = stderr_of(tmp_path)
    offered = set(tool_names(model.requests[0]))
    assert {"toolhost_apply_patch", "toolhost_bash", "toolhost_read"} <= offered, offered
    assert not offered & OWN_TOOLS, offered & OWN_TOOLS

    assert (project / "a.py").read_text() == "x = 2\n", log
    assert (project / "b.py").read_text() == "y = 1\n"
    patch_review = client.permission_requests[0]
    diffs = {item["path"]: item for item in patch_review["toolCall"]["content"]}
    assert diffs[str(project / "a.py")]["oldText"] == "x = 1\n"
    assert diffs[str(project / "b.py")]["oldText"] is None
    assert diffs[str(project / "b.py")]["newText"] == "y = 1\n"

    assert not marker.exists(), "the sandbox let the command write outside the project"
    bash_result = tool_results(model.requests[2])[-1]
    assert "sandbox" in bash_result.lower(), bash_result
    assert len(model.requests) == 3, log


async def test_a_rejected_change_leaves_the_disk_and_the_model_reads_why(
    opencode: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    """Run as the README's Zed ``agent_servers`` entry starts it."""
    model.steps = [ToolCall("toolhost_apply_patch", {"patchText": PATCH}), Reply("Understood.")]
    client = await prompt_opencode(
        opencode, project, tmp_path, model, zed_agent(opencode), choose=lambda _: "reject_once"
    )
    assert len(client.permission_requests) == 1
    assert (project / "a.py").read_text() == "x = 1\n"
    assert not (project / "b.py").exists()
    told = tool_results(model.requests[1])[-1]
    assert "rejected" in told, told


async def test_without_the_switch_opencode_offers_its_own_tools(
    opencode: Path, model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    """The defence off: ``--keep-agent-tools`` and OpenCode offers its own write and bash."""
    model.steps = [Reply("Nothing to do.")]
    env = opencode_env(project, configured_home(tmp_path, model))
    flags = ("--keep-agent-tools",)
    async with proxy(
        readme_agent("acp-opencode", opencode), project, env, tmp_path, options=flags
    ) as client:
        await client.initialize()
        session = await client.new_session(project)
        await client.prompt(session, "Nothing")
    offered = set(tool_names(model.requests[0]))
    assert {"bash", "apply_patch", "read"} <= offered, offered
    assert "toolhost_edit" in offered, offered
