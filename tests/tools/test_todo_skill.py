"""todowrite / todoread and skill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tools.builtin import skill as skill_module
from tools.builtin import todoread, todowrite
from tools.host import ToolHost

TODOS = [
    {"content": "Write the parser", "status": "completed", "priority": "high"},
    {"content": "Test it", "status": "in_progress", "priority": "medium"},
    {"content": "Ship", "status": "pending", "priority": "low", "id": "3"},
]


@pytest.fixture
def tools_host(worktree: Path) -> ToolHost:
    return ToolHost(worktree, tools=[todowrite.tool, todoread.tool, skill_module.tool])


async def test_todos_round_trip_within_a_session(tools_host: ToolHost) -> None:
    written = await tools_host.execute("todowrite", {"todos": TODOS}, session_id="a")
    assert not written.is_error
    assert written.title == "2 todos"
    assert json.loads(written.output) == TODOS
    assert written.output.startswith('[\n  {\n    "content"')
    read = await tools_host.execute("todoread", {}, session_id="a")
    assert read.title == "2 todos"
    assert json.loads(read.output) == TODOS
    assert read.metadata["todos"] == TODOS


async def test_todo_output_is_json_stringify_with_two_spaces(tools_host: ToolHost) -> None:
    # Non-ASCII stays as it is and control characters are escaped, as in OpenCode's
    # JSON.stringify(todos, null, 2).
    todos = [
        {
            "content": 'Fix the caf\u00e9 \u65e5\u672c \U0001f600 tab\there\x1f "q" \\',
            "status": "pending",
            "priority": "high",
            "id": None,
        },
    ]
    written = await tools_host.execute("todowrite", {"todos": todos})
    kept = written.metadata["todos"]
    assert kept[0]["content"] == todos[0]["content"]
    assert written.output == json.dumps(kept, indent=2, ensure_ascii=False)
    assert "\\u001f" in written.output and "caf\u00e9" in written.output


async def test_todos_are_isolated_between_sessions(tools_host: ToolHost) -> None:
    await tools_host.execute("todowrite", {"todos": TODOS}, session_id="a")
    other = await tools_host.execute("todoread", {}, session_id="b")
    assert other.output == "[]" and other.title == "0 todos"


async def test_bad_status_is_an_argument_error(tools_host: ToolHost) -> None:
    bad = [{"content": "x", "status": "done", "priority": "high"}]
    result = await tools_host.execute("todowrite", {"todos": bad})
    assert result.metadata["error"] == "invalid_arguments"
    assert "todos.0.status" in result.output


def write_skill(root: Path, folder: str, text: str, extra: dict[str, str] | None = None) -> Path:
    directory = root / folder
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text)
    for name, content in (extra or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(content)
    return directory


SKILL = """---
name: release
description: How we cut a release
---

# Steps

1. Bump the version.
"""


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


async def test_skill_loads_with_sampled_files(
    tools_host: ToolHost, worktree: Path, isolated_home: Path
) -> None:
    files = {f"scripts/s{i:02}.sh": "echo" for i in range(12)}
    directory = write_skill(worktree / ".opencode" / "skills", "release", SKILL, files)
    editor = RecordingEditor()
    result = await tools_host.execute("skill", {"name": "release"}, editor=editor)
    assert not result.is_error, result.output
    assert result.title == "Loaded skill: release"
    assert result.metadata["name"] == "release"
    assert result.metadata["dir"] == str(directory)
    lines = result.output.splitlines()
    assert lines[:4] == ['<skill_content name="release">', "# Skill: release", "", "# Steps"]
    assert f"Base directory for this skill: {directory.as_uri()}" in lines
    assert sum(1 for line in lines if line.startswith("<file>")) == 10
    assert "SKILL.md</file>" not in result.output
    assert [(a.permission, a.patterns, a.always) for a in editor.asks] == []  # allowed by default


async def test_skill_sources_and_description(
    tools_host: ToolHost, worktree: Path, isolated_home: Path
) -> None:
    write_skill(worktree / ".opencode" / "skill", "release", SKILL)
    write_skill(
        worktree / ".claude" / "skills",
        "review",
        "---\nname: review\ndescription: Review checklist\n---\nLook closely.",
    )
    write_skill(
        isolated_home / ".config" / "opencode" / "skills",
        "global",
        "---\nname: global-one\ndescription: From the global dir\n---\nHi.",
    )
    write_skill(worktree / ".opencode" / "skills", "broken", "no front matter here")
    write_skill(worktree / ".opencode" / "skills", "bad-yaml", "---\nname: [unclosed\n---\nx")
    (offered,) = tools_host.offered()[2:]
    assert offered.id == "skill"
    assert offered.description.endswith(
        "Available skills:\n- **global-one**: From the global dir\n"
        "- **release**: How we cut a release\n- **review**: Review checklist"
    )


async def test_unknown_skill_lists_what_exists(
    tools_host: ToolHost, worktree: Path, isolated_home: Path
) -> None:
    write_skill(worktree / ".opencode" / "skills", "release", SKILL)
    result = await tools_host.execute("skill", {"name": "deploy"})
    assert result.is_error and result.metadata["error"] == "not_found"
    assert result.output == 'Skill "deploy" not found. Available skills: release'


async def test_no_skills(tools_host: ToolHost, isolated_home: Path) -> None:
    result = await tools_host.execute("skill", {"name": "x"})
    assert result.output == 'Skill "x" not found. Available skills: none'
