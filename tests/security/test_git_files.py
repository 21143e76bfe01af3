"""git obeys no file the agent could write: real git, real kernel sandbox.

Each attack plants a command (``core.fsmonitor``, a hook) through a file that decides
which config and hooks git uses, and then the editor's git (run here, outside any
sandbox, as VS Code's git integration would) runs it and writes the marker.  With
the defence off (only ``.git/config`` and ``.git/hooks`` protected, as before) the
marker appears; with it on, the bash write is stopped by the kernel, and a file
tool's change to the same file is asked every time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tests.tools.test_sandbox import bash, make_host
from tools.bash.sandbox import landlock, probe
from tools.bash.sandbox import settings as sandbox_settings
from tools.config.effective import Config
from tools.host import ToolHost
from tools.permission import protected
from tools.permission.rules import rules_from_config

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(landlock.abi_version() < landlock.MIN_ABI, reason="no Landlock ABI 3+"),
]

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@e"]


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", "root")
    return path


def husky(root: Path) -> str:
    """A husky setup: core.hooksPath = .husky, the user's own hook there."""
    new_repo(root)
    (root / ".husky").mkdir()
    (root / ".husky" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (root / ".husky" / "pre-commit").chmod(0o755)
    git(root, "config", "core.hooksPath", ".husky")
    return "printf '#!/bin/sh\\ntouch {marker}\\n' > .husky/pre-commit"


def nested(root: Path) -> str:
    """A repository inside the project, which VS Code's git opens too."""
    new_repo(root)
    new_repo(root / "sub")
    return "git -C sub config core.fsmonitor 'touch {marker}'"


def worktree_config(root: Path) -> str:
    """extensions.worktreeConfig: git reads .git/config.worktree as well."""
    new_repo(root)
    git(root, "config", "extensions.worktreeConfig", "true")
    (root / ".git" / "config.worktree").write_text("")
    return "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > .git/config.worktree"


def included(root: Path) -> str:
    """include.path names a file in the work tree: git reads it as config."""
    new_repo(root)
    (root / "shared.gitconfig").write_text("[color]\n\tui = auto\n")
    git(root, "config", "include.path", "../shared.gitconfig")
    return "printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> shared.gitconfig"


def commondir(root: Path) -> str:
    """A linked worktree: its git dir's commondir names the shared git dir, and a
    rewritten one points git at a config the agent wrote."""
    main = new_repo(root.parent / "main")
    git(main, "worktree", "add", "-q", str(root))
    return (
        'g=$(git rev-parse --git-dir); mkdir -p fake && cp -r "$(git rev-parse --git-common-dir)"'
        "/. fake/ && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> fake/config && "
        'echo "$PWD/fake" > "$g/commondir"'
    )


ATTACKS: dict[str, tuple[Callable[[Path], str], list[str], str]] = {
    # name: (set up, the editor's git command, where it runs)
    "husky": (husky, ["commit", "-q", "--allow-empty", "-m", "x"], "."),
    "nested": (nested, ["status", "--short"], "sub"),
    "config.worktree": (worktree_config, ["status", "--short"], "."),
    "commondir": (commondir, ["status", "--short"], "."),
    "include.path": (included, ["status", "--short"], "."),
}


def old_protection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_settings, "protected_git_paths", lambda root, dot_gits=None: [])
    # Nor the guard on new repositories (a copied git dir is one: sandbox/creations.py).
    monkeypatch.setenv(probe.SIMULATE_VAR, "no-repo-guard")


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_bash_cannot_make_git_run_a_command(
    tmp_path: Path, attack: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, marker = tmp_path / "project", tmp_path / "pwned"
    set_up, editor_git, where = ATTACKS[attack]
    line = set_up(root).format(marker=marker)
    if defence == "off":
        old_protection(monkeypatch)
    result = await bash(make_host(root), line)
    git(root / where, *editor_git)  # the editor's git, outside every sandbox
    if defence == "off":
        assert marker.exists(), result.output  # the attack works
    else:
        assert not marker.exists(), result.output
        assert "protected" in result.metadata["sandbox"]["enforced"]


async def test_git_still_commits_with_husky_hooks_protected(tmp_path: Path) -> None:
    root = tmp_path / "project"
    husky(root)
    line = "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e commit -qm a"
    result = await bash(make_host(root), f"{line} && echo committed")
    assert "committed" in result.output, result.output


FILE_TOOL_TARGETS = {
    "commondir": ".git/commondir",
    "info": ".git/info/attributes",
    "nested config": "sub/.git/config",
    "husky hook": ".husky/pre-commit",
}


@pytest.mark.parametrize("target", list(FILE_TOOL_TARGETS))
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_file_tool_change_to_what_git_obeys_is_always_asked(
    tmp_path: Path, target: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    husky(root)
    new_repo(root / "sub")
    if defence == "off":
        monkeypatch.setattr(protected, "protected_changes", lambda paths, host: {})
    config = Config(rules=rules_from_config({"edit": "allow"}))
    host = ToolHost(root, config=config, read_before_write=False)
    editor = RecordingEditor("reject")
    path = root / FILE_TOOL_TARGETS[target]
    result = await host.execute(
        "write",
        {"filePath": str(path), "content": "[core]\n\tfsmonitor = touch x\n"},
        editor=editor,
    )
    if defence == "off":
        assert not result.is_error and editor.asks == []  # written, nobody asked
        return
    (ask,) = editor.asks
    assert ask.always == [] and protected.ALTERS in ask.title
    assert result.is_error
    assert not path.exists() or "fsmonitor" not in path.read_text(errors="replace")


def test_a_repository_made_after_a_listing_is_found_even_with_its_mtime_set_back(
    tmp_path: Path,
) -> None:
    """The walk trusts a folder's earlier listing only while its ctime is unchanged;
    ``touch -d`` can set an mtime back, never a ctime."""
    from tools.permission import git_files

    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    old = os.stat(folder)
    time.sleep(0.2)  # older than the racy window, so the listing is kept
    assert git_files.repositories(str(tmp_path)) == []
    (folder / ".git").mkdir()
    os.utime(folder, ns=(old.st_atime_ns, old.st_mtime_ns))  # the mtime set back
    assert git_files.repositories(str(tmp_path)) == [str(folder / ".git")]
    shutil.rmtree(folder / ".git")
    assert git_files.repositories(str(tmp_path)) == []
