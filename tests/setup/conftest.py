"""What the setup tests share: a scratch HOME, and a git project to run the agents in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


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
