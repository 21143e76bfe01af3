"""What a start imports: ``toolhost list`` loads only what a listing needs.

``toolhost list`` is run by a person and waited for (bench/spawn.py times it against
150 ms); importing was most of it. The packages ``tools`` and ``tools.fsio`` import each
exported name when it is first asked for, the host makes its sessions and checkpoints on
first use, the crash recoveries are imported only when a journal was left, and the
conditional built-ins decide without their modules (``tools.builtin.listed``).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Modules a listing used to import and does not need: the run machinery behind a call,
# the stdlib modules only they use, and the tools offered only sometimes.
NOT_FOR_A_LISTING = (
    "tools.session",
    "tools.checkpoints.turns",
    "tools.checkpoints.restore",
    "tools.changes.journal",
    "tools.fsio.pages",
    "tools.fsio.text",
    "tools.builtin.task",
    "tools.builtin.websearch",
    "tools.agents.runner",
    "ctypes",
    "hashlib",
    "secrets",
    "shutil",
    "subprocess",
    "datetime",
    "orjson",
    "platformdirs",
)


def test_toolhost_list_imports_only_what_a_listing_needs(tmp_path: Path) -> None:
    code = (
        "import contextlib, io, sys\n"
        "import server.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert server.cli.main(['list', '--cwd', sys.argv[1]]) == 0\n"
        "assert 'read' in out.getvalue()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "TOOLHOST_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
    )
    loaded = set(done.stdout.split())
    assert "tools.host" in loaded
    assert sorted(loaded.intersection(NOT_FOR_A_LISTING)) == []


@pytest.mark.parametrize("package", ["tools", "tools.fsio"])
def test_every_name_a_package_exports_is_its_modules_own(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        if name in module._EXPORTS:
            assert value is getattr(importlib.import_module(module._EXPORTS[name]), name)
    assert set(module._EXPORTS) | ({"tool"} if package == "tools" else set()) == set(module.__all__)
