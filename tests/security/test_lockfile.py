"""server/lockfile.py: private, atomic lock files that readers can trust."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from server import lockfile
from server.lockfile import LockInfo


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    return base


def test_token_is_128_bits_of_hex_and_never_repeats() -> None:
    tokens = {lockfile.new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    assert all(len(t) == 32 and int(t, 16) >= 0 for t in tokens)


def test_write_is_private_and_discover_reads_it_back(runtime: Path, tmp_path: Path) -> None:
    info = LockInfo(
        token=lockfile.new_token(),
        transport="tcp",
        workspace_folders=[str(tmp_path)],
        host="127.0.0.1",
        port=4711,
        editor="Neovim",
    )
    path = lockfile.write(info)
    assert path == runtime / "toolhost" / f"sidecar-{os.getpid()}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = json.loads(path.read_text())
    assert data == {
        "version": 1,
        "pid": os.getpid(),
        "token": info.token,
        "workspaceFolders": [str(tmp_path)],
        "transport": "tcp",
        "host": "127.0.0.1",
        "port": 4711,
        "editor": "Neovim",
        "toolhost": info.toolhost,
    }
    (found,) = lockfile.discover(workspace=tmp_path)
    assert found == info and found.path == path
    assert lockfile.discover(workspace=tmp_path / "elsewhere") == []
    # A rewrite replaces the file in one step; no temp file is left behind.
    lockfile.write(replace(info, editor="vscode"))
    assert lockfile.discover()[0].editor == "vscode"
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    lockfile.remove(path)
    lockfile.remove(path)  # already gone: fine
    assert lockfile.discover() == []


def test_a_dead_sidecars_file_is_removed_and_foreign_files_are_skipped(runtime: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    directory = lockfile.runtime_dir()
    stale = lockfile.write(LockInfo(token=lockfile.new_token(), transport="ws", pid=pid))
    readable = directory / "sidecar-1.json"  # pid 1 is alive, but the file is world-readable
    readable.write_text(json.dumps(LockInfo(token="0" * 32, transport="tcp", pid=1).to_json()))
    readable.chmod(0o644)
    (directory / "sidecar-2.json").write_text("{not json")
    os.chmod(directory / "sidecar-2.json", 0o600)
    link = directory / "sidecar-3.json"
    link.symlink_to(stale)
    assert lockfile.discover() == []
    assert not stale.exists()
    assert readable.exists()  # not ours to judge: skipped, not removed


def test_a_runtime_dir_others_could_enter_is_made_private(runtime: Path) -> None:
    (runtime / "toolhost").mkdir(mode=0o755)
    os.chmod(runtime / "toolhost", 0o755)
    assert stat.S_IMODE(lockfile.runtime_dir().stat().st_mode) == 0o700


def test_tokens_are_compared_whole() -> None:
    token = lockfile.new_token()
    assert lockfile.tokens_match(token, token)
    assert not lockfile.tokens_match(token[:-1], token)
    assert not lockfile.tokens_match(None, token)
    assert not lockfile.tokens_match("\udc80" * 32, token)


def test_the_lock_file_is_announced_once(runtime: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The sidecar writes it when it listens and again after initialize: one log line."""
    from server.lockkeeper import LockKeeper

    keeper = LockKeeper(lockfile.new_token(), "stdio")
    with caplog.at_level(logging.INFO, logger="toolhost.attach"):
        keeper.listening(socket=str(runtime / "s.sock"))
        keeper.initialized([runtime], "test")
    keeper.remove()
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("lock file:")]
    assert said == [f"lock file: {lockfile.lock_path(os.getpid(), lockfile.runtime_dir())}"]
