"""A command cannot make a git repository in the project (issue 27, "the hooks git
really runs"): VS Code's git opens a new repository within a second, while the
command still runs, and obeys its config (``core.fsmonitor``) outside the sandbox.

Each attack first runs with the guard taken away (``TOOLHOST_SANDBOX_SIMULATE=
no-repo-guard``, the probe's documented switch: the rest of the sandbox as usual),
where ``git status`` run from here, as the editor would, writes the marker; then with
it, where the kernel and the supervisor (``tools/bash/sandbox/creations.py``) refuse
the ``.git`` and the model is told how a person can allow one. Ordinary commands that
make many files still work; a person asked in the editor, or a folder listed in
``sandbox.repositories``, gets the repository made.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools.test_sandbox import Editor, bash, make_host
from tools.bash.sandbox import landlock, probe
from tools.config import loosening
from tools.config.effective import Config, SandboxSettings

GIT = shutil.which("git")
pytestmark = [
    pytest.mark.skipif(
        landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
    ),
    pytest.mark.skipif(GIT is None, reason="git is not installed"),
]

ATTACKS = {
    "git init": "git init -q sub && git -C sub config core.fsmonitor 'touch {marker}'",
    "gitfile": "git init -q --separate-git-dir=.sub.git sub && "
    "git --git-dir=.sub.git config core.fsmonitor 'touch {marker}'",
    "gitfile by hand": 'mkdir -p sub && git init -q --bare "$TMPDIR/r.git" && '
    'git --git-dir="$TMPDIR/r.git" config core.bare false && '
    "git --git-dir=\"$TMPDIR/r.git\" config core.fsmonitor 'touch {marker}' && "
    "cp -r \"$TMPDIR/r.git\" .r && echo 'gitdir: ../.r' > sub/.git",
    "bare layout": "git init -q --bare sub && git --git-dir=sub config core.bare false && "
    "git --git-dir=sub config core.worktree .. && "
    "git --git-dir=sub config core.fsmonitor 'touch {marker}'",
    "renamed into place": "git init -q sub && mv sub/.git sub/x && "
    "git --git-dir=sub/x config core.fsmonitor 'touch {marker}' && mv sub/x sub/.git",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def guard_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def switch(off: bool) -> None:
        if off:
            monkeypatch.setenv(probe.SIMULATE_VAR, "no-repo-guard")
        else:
            monkeypatch.delenv(probe.SIMULATE_VAR, raising=False)

    yield switch
    monkeypatch.delenv(probe.SIMULATE_VAR, raising=False)


def editor_git_status(folder: Path) -> None:
    """What VS Code's git runs in a repository it found (outside any sandbox)."""
    subprocess.run(["git", "-C", str(folder), "status", "--short"], capture_output=True)


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_a_repository_made_by_a_command_runs_nothing_outside(
    project: Path, tmp_path: Path, guard_off: Any, attack: str
) -> None:
    marker = tmp_path / "marker"
    command = ATTACKS[attack].format(marker=marker)

    guard_off(True)
    result = await bash(make_host(project), command)
    assert "new-repos" not in result.metadata["sandbox"]["enforced"]
    editor_git_status(project / "sub")
    assert marker.exists(), f"the attack does not work: {result.output}"

    for made in ("sub", ".sub.git", ".r"):
        shutil.rmtree(project / made, ignore_errors=True)
    marker.unlink()
    guard_off(False)
    result = await bash(make_host(project), command)
    assert "new-repos" in result.metadata["sandbox"]["enforced"]
    editor_git_status(project / "sub")
    assert not marker.exists(), result.output
    assert not any((project / "sub").glob("*.git")), list((project / "sub").iterdir())
    refused = result.metadata["sandbox"]["refused"]
    first = ".r" if attack == "gitfile by hand" else "sub"  # its copy of the git dir
    assert {"kind": "repository", "path": str(project / first)} in refused
    assert f"refused to make a git repository in {first}" in result.output
    assert "sandbox" in result.output and "repositories" in result.output


RACE = r"""
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
path = ctypes.create_string_buffer(b"sub/xgit")
done = time.monotonic() + 1.5
def flip():
    while time.monotonic() < done:
        ctypes.memmove(path, b"sub/.git", 8)
        ctypes.memmove(path, b"sub/xgit", 8)
threading.Thread(target=flip, daemon=True).start()
while time.monotonic() < done and not os.path.isdir("sub/.git"):
    libc.mkdir(path, 0o755)
    if os.path.isdir("sub/xgit"):
        os.rmdir("sub/xgit")
print("made" if os.path.isdir("sub/.git") else "never made")
"""


async def test_a_thread_rewriting_the_path_after_the_check_changes_nothing(
    project: Path, tmp_path: Path
) -> None:
    """The supervisor makes the name from its own copy of the path: a check that let
    the call go on would lose this race (the kernel reads the path again)."""
    (project / "sub").mkdir()
    (tmp_path / "race.py").write_text(RACE)
    host = make_host(project, SandboxSettings(writable=(str(tmp_path),)))
    result = await bash(host, f"python3 {tmp_path / 'race.py'}")
    assert "never made" in result.output, result.output
    assert not (project / "sub" / ".git").exists()


TREE = (
    "mkdir -p a/b/c && echo hi > a/b/c/f && umask 077 && touch private && umask 022 && "
    "mkdir src && for i in $(seq 1 200); do echo $i > src/f$i.js; done && "
    "tar -cf t.tar src && mkdir out && tar -xf t.tar -C out && cp -r src copy && "
    "mv copy moved && ln -s moved/f1.js link && ln src/f2.js hard && "
    "python3 -c \"open('py.txt', 'w').write('x')\" && mkfifo pipe && "
    'mv "$(mktemp -d)" fromtmp && '
    "ls out/src | wc -l && cat link && stat -c %a private && ls -d moved fromtmp py.txt"
)


async def test_ordinary_commands_that_make_files_still_work(project: Path) -> None:
    result = await bash(make_host(project), TREE)
    assert result.metadata["exit"] == 0, result.output
    assert "new-repos" in result.metadata["sandbox"]["enforced"]
    lines = result.output.split()
    assert lines[:3] == ["200", "1", "600"], result.output
    assert (project / "a/b/c/f").read_text() == "hi\n"
    assert (project / "hard").stat().st_ino == (project / "src/f2.js").stat().st_ino
    assert (project / "fromtmp").is_dir() and not (project / "fromtmp").is_symlink()
    assert "refused" not in result.metadata["sandbox"]


async def test_existing_repositories_still_work(project: Path) -> None:
    command = (
        "echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e "
        "commit -qm first && git branch b && git tag v1 && git log --oneline | wc -l"
    )
    result = await bash(make_host(project), command)
    assert result.metadata["exit"] == 0, result.output
    assert result.output.split()[0] == "1"


async def test_a_clone_into_the_project_needs_a_person(project: Path, tmp_path: Path) -> None:
    """git clone makes a repository: refused, with the way to allow it; a folder the
    person listed in ``sandbox.repositories`` gets it (and repositories below it)."""
    origin = tmp_path / "origin"
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    who = ["-c", "user.name=t", "-c", "user.email=t@e"]
    commit = ["commit", "-q", "--allow-empty", "-m", "one"]
    subprocess.run(["git", "-C", str(origin), *who, *commit], check=True)
    command = f"git clone -q {origin} vendor/lib && git -C vendor/lib log --oneline"
    result = await bash(make_host(project), command)
    assert result.metadata["exit"] != 0
    assert not (project / "vendor/lib/.git").exists()
    assert "refused to make a git repository in vendor/lib" in result.output
    assert f'"repositories": ["{project / "vendor" / "lib"}"]' in result.output

    shutil.rmtree(project / "vendor")
    allowed = SandboxSettings(repositories=(str(project / "vendor"),))
    result = await bash(make_host(project, allowed), command)
    assert result.metadata["exit"] == 0, result.output
    assert result.output.split()[1] == "one"
    assert (project / "vendor/lib/.git").is_dir()


def test_listing_a_folder_for_repositories_is_a_widening() -> None:
    before = Config()
    after = Config(sandbox=SandboxSettings(repositories=("/home/me/project/vendor",)))
    assert loosening.loosenings(before, after), "a person must accept it"
    assert loosening.loosenings(after, before) == []


async def test_a_person_asked_can_let_the_command_make_it(project: Path) -> None:
    command = "git init -q sub && git -C sub config user.name me && git -C sub config user.name"
    editor = Editor(rerun="once")
    result = await bash(make_host(project), command, editor)
    (ask,) = [a for a in editor.asks if a.metadata.get("sandbox") == "repository"]
    assert ask.title.startswith("Allow this command to make a git repository in sub?")
    assert ask.always == [] and ask.metadata["directories"] == [str(project / "sub")]
    assert result.metadata["exit"] == 0, result.output
    assert (project / "sub" / ".git").is_dir() and result.output.startswith("me")
    assert "stopped making a git repository in sub on the first run" in result.output
    assert "the user allowed it, so the command ran a second time" in result.output

    shutil.rmtree(project / "sub")
    result = await bash(make_host(project), command, Editor(rerun="reject"))
    assert not (project / "sub" / ".git").exists()
    assert "The user did not allow making a git repository in sub." in result.output


async def test_a_symlink_to_a_repository_in_a_cache_is_refused(
    project: Path, tmp_path: Path, guard_off: Any
) -> None:
    """A package cache is writable and not guarded: a repository made there and linked
    into the project would be found by the editor's git through the link."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    cache.mkdir()
    command = (
        f"git init -q {cache}/r && git -C {cache}/r config core.fsmonitor 'touch {marker}' "
        f"&& ln -s {cache}/r sub"
    )
    settings = SandboxSettings(caches=(str(cache),))
    guard_off(True)
    result = await bash(make_host(project, settings), command)
    editor_git_status(project / "sub")
    assert marker.exists(), f"the attack does not work: {result.output}"

    (project / "sub").unlink()
    shutil.rmtree(cache / "r")
    marker.unlink()
    guard_off(False)
    result = await bash(make_host(project, settings), command)
    editor_git_status(project / "sub")
    assert not marker.exists(), result.output
    assert not (project / "sub").is_symlink()
    refused = result.metadata["sandbox"]["refused"]
    assert {"kind": "symlink", "path": str(project / "sub")} in refused
    assert "refused the symlink sub" in result.output
