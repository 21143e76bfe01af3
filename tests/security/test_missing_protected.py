"""A protected path that does not exist yet cannot be created by a command.

The attacks create what another program obeys: ``.vscode/tasks.json`` (a task run
when the folder opens), ``.nvim.lua`` (run by Neovim's exrc), ``.git/commondir`` (git
then reads the config of a folder the agent filled, and the editor's ``git status``
runs its ``core.fsmonitor``).  With the sandbox off they land; with it on, each is
masked by a read-only placeholder in the command's mount namespace, and the project
is left as it was: no placeholder stays after the command.
"""

from __future__ import annotations

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
    if target.startswith(".vscode"):  # the model is told why
        blocked = result.metadata["sandbox"]["blocked"]
        assert {"path": str(worktree / target), "kind": "protected"} in blocked, blocked


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
