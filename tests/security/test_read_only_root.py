"""Outside the writable folders nothing changes: not a file's mode, times or extended
attributes (which Landlock's write rights do not name), and nothing is left in the
shared ``/dev/shm``.

With the defence off (no user namespace: Landlock alone, ``no-userns``) each attack
changes the file outside; with it on, the command's mount namespace has every mount
read-only but the writable folders, and a ``/dev/shm`` of its own.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.tools.test_sandbox import bash, hidden, make_host
from tools.bash.sandbox import landlock, probe

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)

PYTHON = os.path.realpath(sys.executable)
ATTACKS = {
    "chmod": "chmod 600 {f}",
    "touch": "touch -d 2001-01-01 {f}",
    "xattr": f"{PYTHON} -c \"import os, sys; os.setxattr(sys.argv[1], 'user.x', b'1')\" {{f}}",
}


def state(path: Path) -> tuple[Any, ...]:
    info = path.stat()
    return (info.st_mode, info.st_mtime_ns, sorted(os.listxattr(path)))


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_file_outside_keeps_its_mode_times_and_attributes(
    worktree: Path, tmp_path: Path, attack: str, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-userns")
    target = tmp_path / "outside.txt"
    target.write_text("keep me\n")
    target.chmod(0o644)
    before = state(target)
    result = await bash(make_host(worktree), ATTACKS[attack].format(f=hidden(target)))
    if defence == "off":
        assert state(target) != before, result.output  # the attack works
        missing = result.metadata["sandbox"]["missing"]
        assert any(m.startswith("modes, owners, times and attributes") for m in missing)
    else:
        assert state(target) == before, result.output
        assert "fs-write" in result.metadata["sandbox"]["enforced"]


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_nothing_is_left_in_the_shared_dev_shm(
    worktree: Path, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if defence == "off":
        monkeypatch.setenv(probe.SIMULATE_VAR, "no-userns")
    planted = Path("/dev/shm") / f"toolhost-test-{uuid.uuid4().hex}"
    try:
        result = await bash(make_host(worktree), f"echo x > {planted} && cat {planted}")
        assert result.output.startswith("x"), result.output  # writable for the command
        assert planted.exists() == (defence == "off"), result.output
    finally:
        planted.unlink(missing_ok=True)


async def test_the_writable_folders_stay_writable_in_every_way(worktree: Path) -> None:
    line = (
        "echo a > a && chmod 600 a && touch -d 2001-01-01 a && "
        f"{PYTHON} -c \"import os; os.setxattr('a', 'user.x', b'1')\" && "
        'echo t > "$TMPDIR/t" && mv "$TMPDIR/t" t && mkdir -p d/e && mv d f && '
        f'{PYTHON} -c "from multiprocessing import shared_memory as s; '
        "m = s.SharedMemory(create=True, size=8); m.close(); m.unlink(); print('shm ok')\""
    )
    result = await bash(make_host(worktree), line)
    assert result.metadata["exit"] == 0, result.output
    assert "shm ok" in result.output
    assert (worktree / "t").read_text() == "t\n" and (worktree / "f" / "e").is_dir()
    assert os.stat(worktree / "a").st_mode & 0o777 == 0o600
