"""Paths cannot sidestep the external-directory guard (issue 4, "Paths that cannot be
sidestepped"): ``~``, ``..`` and symlinks are resolved before the check, and a path
that does not exist yet is judged by its nearest existing ancestor. The corpus runs
the real read/write/edit/bash tools with an editor that rejects every ask.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.fsio.paths import locations, real, resolve
from tools.host import ToolHost
from tools.result import ToolResult


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    (path / "sub").mkdir(parents=True)
    (path / "secret").write_text("outside secret\n")
    (path / "sub" / "secret2").write_text("deeper secret\n")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "secret").write_text("home secret\n")
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def links(worktree: Path, outside: Path) -> Path:
    """Symlinks inside the project that lead out of it."""
    (worktree / "inside.txt").write_text("inside\n")
    (worktree / "a").mkdir()
    (worktree / "link").symlink_to(outside)  # a directory outside
    (worktree / "sublink").symlink_to(outside / "sub")
    (worktree / "filelink").symlink_to(outside / "secret")
    (worktree / "dangling").symlink_to(outside / "nothing" / "target")
    return worktree


@pytest.fixture
def editor() -> RecordingEditor:
    return RecordingEditor(reply="reject")


def make_host(worktree: Path) -> ToolHost:
    return ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool])


async def call(
    worktree: Path, editor: RecordingEditor, tool: str, args: dict, host: ToolHost | None = None
) -> ToolResult:
    if tool == "bash":
        args = {"description": "Touches a path", **args}
    host = host or make_host(worktree)
    return await host.execute(tool, args, editor=editor, session_id="ses_paths")


def asked_dirs(editor: RecordingEditor) -> list[str]:
    return [p for a in editor.asks if a.permission == "external_directory" for p in a.patterns]


# ---------------------------------------------------------------- file tools

# (tool, args, the directory asked for, relative to tmp_path)
FILE_CORPUS = [
    ("read", {"filePath": "link/secret"}, "outside"),
    ("read", {"filePath": "filelink"}, "outside"),
    ("read", {"filePath": "a/../../outside/secret"}, "outside"),
    ("read", {"filePath": "~/secret"}, "home"),
    ("read", {"filePath": "link"}, "outside"),  # a directory: itself
    ("write", {"filePath": "link/new/deep/file.txt", "content": "x"}, "outside/new/deep"),
    ("write", {"filePath": "dangling", "content": "x"}, "outside/nothing"),
    ("write", {"filePath": "filelink", "content": "x"}, "outside"),
    ("write", {"filePath": "../outside/new.txt", "content": "x"}, "outside"),
    ("write", {"filePath": "~/new/file.txt", "content": "x"}, "home/new"),
    ("edit", {"filePath": "filelink", "oldString": "outside", "newString": "x"}, "outside"),
    ("edit", {"filePath": "link/secret", "oldString": "outside", "newString": "x"}, "outside"),
    ("edit", {"filePath": "a/../../outside/secret", "oldString": "o", "newString": "x"}, "outside"),
]


@pytest.mark.parametrize(
    ("tool", "args", "directory"),
    FILE_CORPUS,
    ids=[f"{t}:{a['filePath']}" for t, a, _ in FILE_CORPUS],
)
async def test_file_tools_ask_for_paths_that_resolve_outside(
    links: Path, outside: Path, home: Path, editor, tool: str, args: dict, directory: str
) -> None:
    before = snapshot(outside.parent)
    result = await call(links, editor, tool, args)
    assert result.metadata["error"] == "permission_rejected", result.output
    assert asked_dirs(editor) == [f"{outside.parent / directory}/*"]
    assert snapshot(outside.parent) == before  # nothing written anywhere


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) and its content."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            found[str(path)] = path.read_text() if path.is_file() else "->"
    return found


async def test_the_asked_path_is_where_the_write_would_land(links: Path, outside: Path) -> None:
    editor = RecordingEditor(reply="once")
    await call(links, editor, "write", {"filePath": "link/new/deep/file.txt", "content": "x"})
    (ask, *_) = editor.asks
    assert ask.metadata["filepath"] == str(outside / "new" / "deep" / "file.txt")
    assert (outside / "new" / "deep" / "file.txt").read_text() == "x"


async def test_a_dangling_link_is_followed_to_its_target(links: Path, outside: Path) -> None:
    editor = RecordingEditor(reply="once")
    await call(links, editor, "write", {"filePath": "dangling", "content": "x"})
    assert editor.asks[0].metadata["filepath"] == str(outside / "nothing" / "target")
    assert (outside / "nothing" / "target").read_text() == "x"  # written through the link


async def test_paths_that_stay_inside_do_not_ask(links: Path, editor) -> None:
    host = make_host(links)  # one session: the read lets the edit through
    for tool, args in [
        ("write", {"filePath": "new/dir/file.txt", "content": "x"}),
        ("read", {"filePath": "a/../inside.txt"}),
        ("write", {"filePath": "a/../../project/made.txt", "content": "y"}),
        ("edit", {"filePath": "inside.txt", "oldString": "inside", "newString": "in"}),
    ]:
        result = await call(links, editor, tool, args, host)
        assert not result.is_error, (tool, args, result.output)
    assert editor.asks == []
    assert (links / "new" / "dir" / "file.txt").read_text() == "x"
    assert (links / "made.txt").read_text() == "y"


async def test_dotdot_after_a_link_is_folded_where_the_file_tool_writes(
    links: Path, outside: Path, editor
) -> None:
    # `link/../x` is folded to `x` in the project before the check, and the write
    # goes to that same path: the check and the write agree.
    result = await call(links, editor, "write", {"filePath": "link/../folded.txt", "content": "z"})
    assert not result.is_error
    assert (links / "folded.txt").read_text() == "z"
    assert not (outside.parent / "folded.txt").exists()


async def test_a_path_reaching_the_project_through_an_outside_link_asks(
    worktree: Path, tmp_path: Path, editor
) -> None:
    (tmp_path / "door").symlink_to(worktree)
    (worktree / "f.txt").write_text("f\n")
    result = await call(worktree, editor, "read", {"filePath": str(tmp_path / "door" / "f.txt")})
    assert result.metadata["error"] == "permission_rejected"
    assert asked_dirs(editor) == [f"{tmp_path / 'door'}/*"]


# ---------------------------------------------------------------- bash

BASH_CORPUS = [
    ("cat ~/secret", ["home"]),
    ('cat "$HOME/secret"', ["home"]),
    ("cat ${HOME}/secret", ["home"]),
    ("cat link/secret", ["outside"]),
    ("cat filelink", ["outside"]),
    ("cat sublink/../secret", ["outside"]),  # the kernel reads link/.. physically
    ("cat a/../../outside/secret", ["outside"]),
    ("cp inside.txt ../outside/", ["outside"]),
    ("cp inside.txt ../outside/new-name", ["outside"]),  # not there yet: its parent
    ("cp inside.txt link/new/deep/", ["outside/new/deep"]),
    ("touch dangling", ["outside/nothing"]),
    ("mkdir -p ../outside/x/y", ["outside/x"]),
    ("echo x > ../outside/out.txt", ["outside"]),
    ("echo x >> ~/log", ["home"]),
    ("cat < link/secret", ["outside"]),
    ("env cat ~/secret", ["home"]),
    ("bash -c 'cat ~/secret'", ["home"]),
    ("sudo -n rm -rf ../outside", ["outside"]),
    ("cd sublink && cat secret2", ["outside/sub"]),
    ("cd ../outside && cat sub/secret2", ["outside", "outside/sub"]),
]


@pytest.mark.parametrize(("command", "directories"), BASH_CORPUS, ids=[c for c, _ in BASH_CORPUS])
async def test_bash_asks_for_path_arguments_that_resolve_outside(
    links: Path, outside: Path, home: Path, editor, command: str, directories: list[str]
) -> None:
    before = snapshot(outside.parent)
    result = await call(links, editor, "bash", {"command": command})
    assert result.metadata["error"] == "permission_rejected", result.output
    assert asked_dirs(editor) == [f"{outside.parent / d}/*" for d in directories]
    assert snapshot(outside.parent) == before


@pytest.mark.parametrize(
    "command",
    [
        "cat inside.txt > copy.txt 2>/dev/null",
        "ls a/.. && cat ./a/../inside.txt",
        "echo x >&2 2>&1 </dev/null",
        "mkdir -p new/deep && touch new/deep/f",
        "rm -f missing-file",
    ],
)
async def test_bash_paths_inside_the_project_do_not_ask(links: Path, editor, command: str) -> None:
    result = await call(links, editor, "bash", {"command": command})
    assert not result.is_error, result.output
    assert editor.asks == []


# ---------------------------------------------------------------- the helpers


def test_real_judges_a_new_path_by_its_nearest_existing_ancestor(links: Path, outside) -> None:
    assert real(links / "link" / "a" / "b" / "c.txt") == outside / "a" / "b" / "c.txt"
    assert real(links / "dangling" / "x") == outside / "nothing" / "target" / "x"
    assert real(links / "new" / "x") == real(links) / "new" / "x"


def test_resolve_expands_home_and_folds_dotdot(home: Path, worktree: Path) -> None:
    assert resolve("~/x", worktree) == home / "x"
    assert resolve("a/../../b", worktree) == worktree.parent / "b"


def test_locations_gives_both_readings_of_dotdot_after_a_link(links: Path, outside) -> None:
    assert locations("sublink/../secret", links) == [real(links) / "secret", outside / "secret"]
    assert locations("a/../inside.txt", links) == [real(links) / "inside.txt"]
