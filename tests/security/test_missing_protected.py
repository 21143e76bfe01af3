"""A protected path that does not exist yet cannot be created by a command.

The attacks create what another program obeys: ``.vscode/tasks.json`` (a task run
when the folder opens), ``.nvim.lua`` (run by Neovim's exrc), ``.git/commondir`` (git
then reads the config of a folder the agent filled, and the editor's ``git status``
runs its ``core.fsmonitor``).  With the sandbox off they land; with it on, a missing
path in the project is a name the supervisor refuses to make (``creations``), and one
the guard does not cover (in a git dir, or with the guard off) is masked by a read-only
placeholder in the command's mount namespace. Either way the project is left as it
was, and no placeholder is seen in it while the command runs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.security.test_git_files import git, new_repo
from tests.tools.test_sandbox import OFF, bash, make_host
from tools.bash.sandbox import landlock, masks, probe

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)

TASKS = '{"version": "2.0.0", "tasks": [{"label": "x", "command": "touch pwned", '
TASKS += '"runOptions": {"runOn": "folderOpen"}}]}'
CREATES = {
    ".vscode/tasks.json": f"mkdir -p .vscode && echo '{TASKS}' > .vscode/tasks.json",
    ".nvim.lua": "echo 'os.execute(\"touch pwned\")' > .nvim.lua",
    ".nvimrc": "cp /dev/null .nvimrc",
    ".exrc": "python3 -c \"open('.exrc', 'w').write('!touch pwned')\"",
}


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)


@pytest.mark.parametrize("target", list(CREATES))
async def test_a_missing_editor_file_cannot_be_created(worktree: Path, target: str) -> None:
    line = CREATES[target]
    await bash(make_host(worktree, OFF), line)
    assert (worktree / target).is_file(), "the attack does not work"  # with no sandbox
    for created in (worktree / ".vscode", worktree / target):
        subprocess.run(["rm", "-rf", str(created)], check=True)
    before = listing(worktree)
    result = await bash(make_host(worktree), line)
    assert not (worktree / target).exists(), result.output
    assert listing(worktree) == before  # no placeholder left behind
    assert "protected" in result.metadata["sandbox"]["enforced"]
    refused = {"path": str(worktree / target.split("/")[0]), "kind": "protected"}
    assert refused in result.metadata["sandbox"]["refused"], result.metadata["sandbox"]
    assert refused in result.metadata["sandbox"]["blocked"]  # the model is told why
    assert "may not change" in result.output


# Every call that makes a name, each tried on a missing protected path in the project.
MAKES = {
    "mkdir": ("mkdir .vscode", ".vscode"),
    "open O_CREAT": (
        "python3 -c \"import os; os.close(os.open('.nvim.lua', os.O_CREAT | os.O_WRONLY))\"",
        ".nvim.lua",
    ),
    "rename in the project": ("echo x > a.lua && mv a.lua .nvim.lua", ".nvim.lua"),
    "rename from the temp dir": (
        'mkdir "$TMPDIR/v" && echo {} > "$TMPDIR/v/tasks.json" && mv "$TMPDIR/v" .vscode',
        ".vscode",
    ),
    "hard link": ("echo x > a.lua && ln a.lua .nvim.lua", ".nvim.lua"),
    "symlink": ("ln -s a.lua .exrc", ".exrc"),
    "fifo": ("mkfifo .nvimrc", ".nvimrc"),
    "through a dangling symlink": ("ln -s .nvim.lua b && echo x > b", ".nvim.lua"),
    "another agent's config": ("mkdir -p .claude/commands", ".claude"),
}


@pytest.mark.parametrize("how", list(MAKES))
async def test_no_call_makes_a_missing_protected_name(worktree: Path, how: str) -> None:
    line, name = MAKES[how]
    before = set(os.listdir(worktree))
    await bash(make_host(worktree, OFF), line)
    assert os.path.lexists(worktree / name), "the attack does not work"  # with no sandbox
    made = [str(worktree / n) for n in set(os.listdir(worktree)) - before]
    subprocess.run(["rm", "-rf", *made], check=True)
    result = await bash(make_host(worktree), line)
    assert not os.path.lexists(worktree / name), result.output
    refused = {"path": str(worktree / name), "kind": "protected"}
    assert refused in result.metadata["sandbox"].get("refused", []), result.metadata["sandbox"]


async def test_no_placeholder_appears_in_the_project_while_a_command_runs(
    worktree: Path,
) -> None:
    """A placeholder came and went with every command: file explorers and watchers saw
    ``.vscode``, ``.claude``, ``.idea``… flicker in the project."""
    seen: set[str] = set()
    host = make_host(worktree)
    running = asyncio.ensure_future(bash(host, "sleep 1"))
    while not running.done():
        seen.update(os.listdir(worktree))
        await asyncio.sleep(0.01)
    assert (await running).metadata["exit"] == 0
    assert not seen & masks.MASKED_NAMES, sorted(seen & masks.MASKED_NAMES)


async def test_without_the_guard_a_placeholder_masks_the_name(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(probe.SIMULATE_VAR, probe.GUARD_OFF)
    result = await bash(make_host(worktree), CREATES[".nvim.lua"])
    assert not (worktree / ".nvim.lua").exists(), result.output
    assert "refused" not in result.metadata["sandbox"]  # the placeholder held it
    assert ".nvim.lua: Is a directory" in result.output  # the placeholder, read-only
    assert not os.path.lexists(worktree / ".nvim.lua")  # and gone with the command


POINT_ELSEWHERE = (
    "mkdir fake && cp -r .git/. fake/ && printf '[core]\\n\\tfsmonitor = touch {marker}\\n' "
    '>> fake/config && echo "$PWD/fake" > .git/commondir'
)


@pytest.mark.parametrize("defence", ["off", "on", "on-bwrap"])
async def test_a_missing_commondir_cannot_point_git_elsewhere(
    tmp_path: Path, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "on-bwrap":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap is not installed")
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-landlock")  # bubblewrap is the engine
    root, marker = new_repo(tmp_path / "project"), tmp_path / "pwned"
    host = make_host(root, OFF if defence == "off" else None)
    result = await bash(host, POINT_ELSEWHERE.format(marker=marker))
    git(root, "status", "--short")  # the editor's git, outside every sandbox
    if defence == "off":
        assert marker.exists(), result.output  # the attack works
        return
    assert not marker.exists(), result.output
    assert not (root / ".git" / "commondir").exists()  # the placeholder went with it
    assert result.metadata["sandbox"]["engine"] == ("bwrap" if "bwrap" in defence else "landlock")


async def test_git_works_while_commondir_is_masked(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "project")
    line = (
        "echo a > a && git add a && git -c user.name=t -c user.email=t@e commit -qm a "
        "&& cat .git/commondir && git log --oneline | wc -l"
    )
    result = await bash(make_host(root), line)
    assert result.metadata["exit"] == 0, result.output
    assert result.output.split()[:2] == [".", "2"], result.output
    assert not (root / ".git" / "commondir").exists()


def test_a_placeholder_someone_filled_is_left_alone(tmp_path: Path) -> None:
    places = masks.Placeholders()
    folder, commondir = tmp_path / ".vscode", tmp_path / "commondir"
    assert places.take(1, [str(folder), str(commondir)]) == [str(folder), str(commondir)]
    assert places.take(2, [str(folder)]) == [str(folder)]  # shared
    (folder / "settings.json").write_text("{}")  # the user, outside the sandbox
    places.release(1)
    assert folder.exists() and not commondir.exists()  # still used by call 2
    places.release(2)
    assert (folder / "settings.json").exists()  # not empty: theirs now


async def test_without_user_namespaces_the_guard_still_refuses_the_name(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No mount namespace, so no placeholder could be bound: the guard alone holds."""
    monkeypatch.setenv(probe.SIMULATE_VAR, "no-userns")
    result = await bash(make_host(worktree), CREATES[".nvim.lua"])
    assert not os.path.lexists(worktree / ".nvim.lua"), result.output
    refused = {"path": str(worktree / ".nvim.lua"), "kind": "protected"}
    assert refused in result.metadata["sandbox"]["refused"], result.metadata["sandbox"]
