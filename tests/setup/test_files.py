"""``toolhost setup`` against configs that already hold the user's settings.

Each agent's files start with settings of the user's own (comments too, for Codex's
TOML); setup merges toolhost in, keeps a backup of the file as it was, shows the diff,
and a second run changes nothing and says so. A file that cannot be parsed, or a key
of the wrong type, is refused with nothing written.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from server.acp.agents import OPENCODE_OFF
from server.cli import main
from server.setup.agents import CLAUDE_CODE_OFF, GEMINI_CLI_OFF
from server.setup.main import BACKUP_SUFFIX

TOOLHOST = str(Path(__import__("sys").executable).with_name("toolhost"))


@pytest.fixture
def user(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scratch HOME as this process's, the agents' own variables unset."""
    folder = home
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCODE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def setup(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["setup", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def assert_backed_up_then_idempotent(
    capsys: pytest.CaptureFixture[str], agent: str, originals: dict[Path, str]
) -> None:
    for path, text in originals.items():
        assert Path(f"{path}{BACKUP_SUFFIX}").read_text() == text
    after = {path: path.read_text() for path in originals}
    code, out = setup(capsys, agent)
    assert code == 0 and "already set up, nothing changed" in out, out
    assert {path: path.read_text() for path in originals} == after


def test_claude_keeps_the_users_servers_rules_and_env(
    user: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = {"numStartups": 7, "mcpServers": {"other": {"command": "other-mcp", "args": []}}}
    servers = write(user / ".claude.json", json.dumps(state, indent=2))
    mine = {"permissions": {"deny": ["WebFetch"], "allow": ["Bash(ls)"]}, "env": {"A": "1"}}
    settings = write(user / ".claude" / "settings.json", json.dumps(mine))
    originals = {servers: servers.read_text(), settings: settings.read_text()}

    code, out = setup(capsys, "claude")
    assert code == 0, out
    assert f'+      "command": "{TOOLHOST}",' in out  # the diff is shown
    written = json.loads(servers.read_text())
    assert written["numStartups"] == 7 and written["mcpServers"]["other"]["command"] == "other-mcp"
    assert written["mcpServers"]["toolhost"] == {
        "type": "stdio",
        "command": TOOLHOST,
        "args": ["mcp"],
        "env": {},
    }
    rules = json.loads(settings.read_text())
    assert rules["permissions"]["deny"] == ["WebFetch", *CLAUDE_CODE_OFF]
    assert rules["permissions"]["allow"] == ["Bash(ls)"]
    assert rules["env"] == {
        "A": "1",
        "ENABLE_TOOL_SEARCH": "false",
        "MCP_CONNECTION_NONBLOCKING": "false",
    }
    assert_backed_up_then_idempotent(capsys, "claude", originals)


def test_codex_keeps_comments_and_other_tables(
    user: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '# mine\nmodel = "o3"  # the best\n\n[features]\nweb_search = true\n'
    config = write(user / ".codex" / "config.toml", text)

    code, out = setup(capsys, "codex")
    assert code == 0, out
    written = config.read_text()
    assert written.startswith('# mine\nmodel = "o3"  # the best\n'), written
    data = tomllib.loads(written)
    assert data["mcp_servers"]["toolhost"] == {
        "command": TOOLHOST,
        "args": ["mcp"],
        "required": True,
        "tool_timeout_sec": 3600,  # its 300 s would cut a long build: bash has its own
    }
    assert data["features"] == {
        "web_search": True,
        "shell_tool": False,
        "unified_exec": False,
        "apply_patch_freeform": False,
    }
    assert "[mcp_servers]" not in written  # no empty header above the server's table
    assert_backed_up_then_idempotent(capsys, "codex", {config: text})


def test_opencode_puts_its_tools_map_where_toolhost_does_not_read_it(
    user: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = {"model": "local/qwen", "mcp": {"other": {"type": "remote", "url": "http://x"}}}
    config = write(user / ".config" / "opencode" / "opencode.json", json.dumps(mine))
    own = write(user / ".opencode" / "opencode.json", json.dumps({"tools": {"webfetch": False}}))
    originals = {config: config.read_text(), own: own.read_text()}

    code, out = setup(capsys, "opencode")
    assert code == 0, out
    written = json.loads(config.read_text())
    assert written["model"] == "local/qwen" and "other" in written["mcp"]
    assert "$schema" not in written  # only a new file gets one
    assert written["mcp"]["toolhost"] == {
        "type": "local",
        "command": [TOOLHOST, "mcp"],
        "enabled": True,
    }
    assert "tools" not in written  # toolhost reads this file: its own tools stay on
    tools = json.loads(own.read_text())["tools"]
    assert tools == {"webfetch": False, **{name: False for name in OPENCODE_OFF}}
    assert_backed_up_then_idempotent(capsys, "opencode", originals)

    from tools.config.files import load_config

    project = user / "code"
    project.mkdir()
    assert load_config(project).config.enabled == {}  # nothing of toolhost's turned off


def test_gemini_extends_the_users_excluded_tools(
    user: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = {"theme": "Dracula", "tools": {"exclude": ["web_fetch"]}, "mcpServers": {}}
    settings = write(user / ".gemini" / "settings.json", json.dumps(mine, indent=2) + "\n")
    original = settings.read_text()

    code, out = setup(capsys, "gemini")
    assert code == 0, out
    written = json.loads(settings.read_text())
    assert written["theme"] == "Dracula"
    assert written["tools"]["exclude"] == ["web_fetch", *GEMINI_CLI_OFF]
    assert written["mcpServers"]["toolhost"] == {
        "command": TOOLHOST,
        "args": ["mcp"],
        "timeout": 3_600_000,  # its 600 s would cut a long build: bash has its own
    }
    assert_backed_up_then_idempotent(capsys, "gemini", {settings: original})


def test_project_files_and_print_writes_nothing(
    user: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    code, out = setup(capsys, "claude", "--project", "--cwd", str(project), "--print")
    assert code == 0 and f"+++ {project / '.mcp.json'}" in out, out
    assert "--print, so nothing was written" in out
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()

    code, out = setup(capsys, "opencode", "--project", "--cwd", str(project))
    assert code == 0, out
    config = json.loads((project / "opencode.json").read_text())
    assert "toolhost" in config["mcp"] and "tools" not in config
    assert "OpenCode's own tools stay on for this folder" in out
    assert not (user / ".opencode").exists()

    for agent, path in (("codex", ".codex/config.toml"), ("gemini", ".gemini/settings.json")):
        code, out = setup(capsys, agent, "--project", "--cwd", str(project))
        assert code == 0 and (project / path).exists(), out
    assert not (user / ".codex").exists() and not (user / ".gemini").exists()


@pytest.mark.parametrize(
    ("agent", "path", "text", "says"),
    [
        ("claude", ".claude/settings.json", '{"env": {"A": "1",}}', "line 1 column 19"),
        ("opencode", ".opencode/opencode.json", '{\n  // mine\n  "tools": {}\n}', "comments"),
        ("codex", ".codex/config.toml", "model = \n", "cannot be parsed"),
        ("gemini", ".gemini/settings.json", '{"tools": {"exclude": "x"}}', "`tools.exclude`"),
    ],
)
def test_a_config_that_cannot_be_read_is_refused_and_nothing_is_written(
    user: Path, capsys: pytest.CaptureFixture[str], agent: str, path: str, text: str, says: str
) -> None:
    broken = write(user / path, text)
    code, out = setup(capsys, agent)
    assert code == 1 and says in out and "nothing was written" in out, out
    assert broken.read_text() == text
    written = [p for p in user.rglob("*") if p.is_file() and p != broken]
    assert written == [], written  # not even the agent's other file
