"""A file's own protection holds: a read-only file is never replaced through a rename.

Replacing a file (temp file, rename over it) needs write permission on its folder
only, so before the fix a ``0444`` file was changed like any other.  Root ignores
mode bits altogether, so as root the check is of the bits themselves; the same
attack also runs as an unprivileged user (``setpriv``), where the kernel is the
judge of what that user may write.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tools.changes import load, transaction
from tools.host import ToolHost

ORIGINAL = "do not change me\n"


@pytest.fixture
def locked_file(worktree: Path) -> Path:
    path = worktree / "locked.txt"
    path.write_text(ORIGINAL)
    path.chmod(0o444)
    return path


CALLS = {
    "write": lambda p: {"filePath": str(p), "content": "changed\n"},
    "edit": lambda p: {"filePath": str(p), "oldString": "do not", "newString": "please"},
    "apply_patch": lambda p: {
        "patchText": f"*** Begin Patch\n*** Update File: {p.name}\n@@\n-do not change me\n"
        "+changed\n*** End Patch"
    },
    "apply_patch-delete": lambda p: {
        "patchText": f"*** Begin Patch\n*** Delete File: {p.name}\n*** End Patch"
    },
}


def defence_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as writable, as before: the rename replaces it."""
    monkeypatch.setattr(load, "writable", lambda info: True)
    monkeypatch.setattr(transaction, "writable", lambda info: True)


@pytest.mark.parametrize("call", CALLS)
async def test_a_read_only_file_is_replaced_without_the_defence(
    worktree: Path, locked_file: Path, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    defence_off(monkeypatch)
    host = ToolHost(worktree, read_before_write=False)
    result = await host.execute(call.split("-")[0], CALLS[call](locked_file))
    assert not result.is_error, result.output
    assert not locked_file.exists() or locked_file.read_text() != ORIGINAL  # the attack works


@pytest.mark.parametrize("call", CALLS)
async def test_a_read_only_file_is_refused_with_a_clear_error(
    worktree: Path, locked_file: Path, call: str
) -> None:
    host = ToolHost(worktree, read_before_write=False)
    result = await host.execute(call.split("-")[0], CALLS[call](locked_file))
    assert result.is_error
    assert "read-only (mode 0444)" in result.output, result.output
    assert locked_file.read_text() == ORIGINAL
    assert stat.S_IMODE(locked_file.stat().st_mode) == 0o444
    assert [p.name for p in worktree.iterdir()] == ["locked.txt"]  # no temp file left


async def test_the_transaction_refuses_it_even_when_planning_did_not(
    worktree: Path, locked_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made read-only between planning and writing: the transaction is the last word."""
    monkeypatch.setattr(load, "writable", lambda info: True)
    host = ToolHost(worktree, read_before_write=False)
    result = await host.execute("write", CALLS["write"](locked_file))
    assert result.is_error and "read-only (mode 0444)" in result.output
    assert locked_file.read_text() == ORIGINAL


UNPRIVILEGED = 65534  # nobody

SNIPPET = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from tools.changes import load, transaction
    from tools.host import ToolHost
    root, off = Path(sys.argv[1]), sys.argv[2] == "off"
    if off:
        load.writable = transaction.writable = lambda info: True
    host = ToolHost(root, read_before_write=False)
    result = asyncio.run(host.execute(
        "write", {"filePath": str(root / "locked.txt"), "content": "changed\\n"}))
    print(json.dumps({"error": result.is_error, "output": result.output}))
    """
)


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv"
)
@pytest.mark.parametrize("defence", ["off", "on"])
def test_as_an_unprivileged_user(defence: str) -> None:
    # pytest's own temp dirs are private to root: this one the other user can reach.
    tmp_path = Path(tempfile.mkdtemp(prefix="toolhost-unprivileged-"))
    tmp_path.chmod(0o755)
    try:
        run_unprivileged(tmp_path, defence)
    finally:
        shutil.rmtree(tmp_path)


def run_unprivileged(tmp_path: Path, defence: str) -> None:
    root = tmp_path / "theirs"
    root.mkdir()
    locked = root / "locked.txt"
    locked.write_text(ORIGINAL)
    locked.chmod(0o444)
    for path in (tmp_path, root, locked):
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    tmp_path.chmod(0o755)
    data = tmp_path / "data"
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={UNPRIVILEGED}",
            f"--regid={UNPRIVILEGED}",
            "--clear-groups",
            sys.executable,
            "-c",
            SNIPPET,
            str(root),
            defence,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env={**os.environ, "HOME": str(tmp_path), "TOOLHOST_DATA_DIR": str(data)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    if defence == "off":  # the kernel lets the owner rename over a file it may not write
        assert not result["error"], result["output"]
        assert locked.read_text() == "changed\n"
    else:
        assert result["error"] and "read-only (mode 0444)" in result["output"]
        assert locked.read_text() == ORIGINAL
