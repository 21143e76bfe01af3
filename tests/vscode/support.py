"""Shared by the two VS Code tiers: where the extension lives, and its npm install."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.parallel import install_lock

ROOT = Path(__file__).resolve().parent.parent.parent
EXTENSION = ROOT / "editors" / "vscode"
# The console script of the toolhost under test: the one beside this interpreter.
TOOLHOST = Path(sys.executable).with_name("toolhost")


def require_node() -> None:
    """Skip when Node.js or npm is missing (the only reason these tiers may skip)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the VS Code extension tests need {' and '.join(missing)} on PATH")


def run(
    args: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``args`` in its own process group; on a timeout the whole group is killed (``node
    --test`` runs each file in a child, which outlived a killed parent by half an hour)."""
    with subprocess.Popen(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            stderr += f"\n(killed with its process group after {timeout} s)"
            return subprocess.CompletedProcess(args, -9, stdout, stderr)
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def node_env() -> dict[str, str]:
    return {
        "TOOLHOST": str(TOOLHOST),
        "TOOLHOST_PYTHON": sys.executable,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }


def ensure_node_modules(project: Path = EXTENSION) -> None:
    """``npm ci`` in ``project`` when its node_modules is missing or older than its
    package-lock.json; one at a time (``npm ci`` first deletes node_modules, which
    another worker may be using)."""
    lock = project / "package-lock.json"
    installed = project / "node_modules" / ".package-lock.json"
    with install_lock(project / "node_modules"):
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            return
        done = run(["npm", "ci", "--no-audit", "--no-fund"], project, 600, node_env())
    assert done.returncode == 0, f"npm ci failed in {project}:\n{done.stdout}\n{done.stderr}"


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
