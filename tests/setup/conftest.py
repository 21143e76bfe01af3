"""What the setup tests share: a scratch HOME, and a git project to run the agents in; and
after each test, the check that it left no process running (``tests/acp/leftovers.py``)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.leftovers import nothing_left_behind


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from nothing_left_behind(tmp_path, monkeypatch)
