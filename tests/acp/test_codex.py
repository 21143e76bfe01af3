"""``toolhost acp -- codex-acp``: Zed's Codex adapter behind the proxy.

codex-acp 0.16.0 (npm; a Rust binary in its platform package) against the scripted
Responses API on 127.0.0.1.  The proxy adds ``-c features.shell_tool=false -c
features.unified_exec=false -c features.apply_patch_freeform=false -c
include_apply_patch_tool=false``: the model is offered toolhost's tools (Codex's
``mcp__toolhost`` namespace) and no shell or apply_patch of Codex's own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.client import proxy, readme_agent, stderr_of
from tests.acp.schema import validate_sent
from tests.mcp.helpers import npm_cli
from tests.mcp.test_codex import codex_env, provider_config
from tests.scripted_model import Reply, ScriptedModel
from tests.scripted_responses import offered_tools, serve_responses

VERSION = "0.16.0"
OWN_TOOLS = {"shell", "shell_command", "exec_command", "write_stdin", "apply_patch"}


@pytest.fixture(scope="module")
def adapter() -> Path:
    return npm_cli("@zed-industries/codex-acp", VERSION, "codex-acp", "codex-acp")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    yield from serve_responses(ScriptedModel([]))


@pytest.mark.parametrize("keep", [False, True], ids=["own-tools-off", "defence-off"])
async def test_codex_is_offered_toolhost_and_none_of_its_own_shell_or_patch(
    adapter: Path, model: ScriptedModel, tmp_path: Path, keep: bool
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(provider_config(model))
    model.steps = [Reply("Nothing to change.")]
    env = {**codex_env(home), "OPENAI_API_KEY": "sk-scripted-not-a-key"}
    flags = ("--keep-agent-tools",) if keep else ()
    async with proxy(
        readme_agent("acp-codex", adapter), project, env, tmp_path, options=flags
    ) as client:
        await client.initialize()
        session = await client.new_session(project)
        result = await client.prompt(session, "Look around")
        assert result["stopReason"] == "end_turn", stderr_of(tmp_path)
    validate_sent(client.sent())
    assert model.requests, stderr_of(tmp_path)
    offered = set(offered_tools(model.requests[0]))
    assert {"mcp__toolhost__edit", "mcp__toolhost__bash"} <= offered, offered
    if keep:  # without the switch Codex offers its own shell beside toolhost's
        assert offered & OWN_TOOLS, offered
    else:
        assert not offered & OWN_TOOLS, offered & OWN_TOOLS
