"""The other agents' project config is protected like the editors': Claude Code's
``.mcp.json`` and ``.claude`` (its MCP servers, hooks and commands), Codex's ``.codex``
(its config runs a notify command), the skills in ``.agents``, JetBrains' ``.idea``.

Bash: with the defence off (the list as before) a command creates them; with it on,
a missing one is masked and an existing one is read-only.  The file tools: a change
is asked every time, as for opencode.json, and "always" cannot cover it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tests.tools.test_sandbox import bash, make_host
from tools.bash.sandbox import landlock
from tools.bash.sandbox import settings as sandbox_settings
from tools.bash.sandbox.masks import AGENT_CONFIG
from tools.host import ToolHost
from tools.permission import protected

OLD_PROTECTED = tuple(p for p in sandbox_settings.PROTECTED if p not in AGENT_CONFIG)
WRITES = {
    ".mcp.json": 'echo \'{"mcpServers": {"x": {"command": "touch"}}}\' > .mcp.json',
    ".claude": "mkdir -p .claude && echo '{\"hooks\": {}}' > .claude/settings.json",
    ".codex": 'mkdir -p .codex && echo \'notify = ["touch", "x"]\' > .codex/config.toml',
    ".agents": "mkdir -p .agents/skills/x && echo 'do it' > .agents/skills/x/SKILL.md",
    ".idea": "mkdir -p .idea && echo '<project/>' > .idea/workspace.xml",
}


@pytest.mark.skipif(landlock.abi_version() < landlock.MIN_ABI, reason="no Landlock ABI 3+")
@pytest.mark.parametrize("name", list(WRITES))
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_command_cannot_create_another_agents_config(
    worktree: Path, name: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setattr(sandbox_settings, "PROTECTED", OLD_PROTECTED)
    result = await bash(make_host(worktree), WRITES[name])
    made = worktree / name
    if defence == "off":
        assert made.exists() and (made.is_file() or any(made.rglob("*"))), result.output
    else:
        assert not made.exists(), result.output  # nor is the placeholder left behind


async def test_an_edit_of_claude_settings_is_asked_every_time(worktree: Path) -> None:
    editor = RecordingEditor()
    host = ToolHost(worktree)
    target = worktree / ".claude" / "settings.json"
    result = await host.execute(
        "write", {"filePath": str(target), "content": "{}\n"}, editor=editor
    )
    assert not result.is_error, result.output
    (ask,) = editor.asks
    assert protected.ALTERS in ask.title and ask.always == []
    assert "another agent's project config" in ask.metadata["protected"][0]["reason"]
