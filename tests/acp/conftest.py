"""What the ACP tests share: a git project holding ``a.py``; and after each test, the check
that it left no process running (``tests/acp/leftovers.py``)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.leftovers import nothing_left_behind


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "a.py").write_text("x = 1\n")
    return folder


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from nothing_left_behind(tmp_path, monkeypatch)
