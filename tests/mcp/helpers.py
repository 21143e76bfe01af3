"""Driving ``toolhost mcp`` with the official MCP Python SDK's client over stdio."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLHOST = Path(sys.executable).with_name("toolhost")
# Where the MCP hosts' npm packages are installed once, across runs.
E2E_CACHE = Path(os.environ.get("TOOLHOST_E2E_CACHE", Path.home() / ".cache" / "toolhost-e2e"))


def server_params(root: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return StdioServerParameters(
        command=str(TOOLHOST),
        args=["mcp", *args],
        cwd=str(root),
        env={**os.environ, **(env or {})},
    )


@contextlib.asynccontextmanager
async def mcp_client(
    root: Path,
    *args: str,
    initialize: bool = True,
    env: dict[str, str] | None = None,
    **session: Any,
) -> AsyncIterator[ClientSession]:
    """A ``toolhost mcp`` in ``root`` and an SDK ``ClientSession`` on it (initialized)."""
    async with (
        stdio_client(server_params(root, *args, env=env)) as (read, write),
        ClientSession(read, write, **session) as client,
    ):
        if initialize:
            await client.initialize()
        yield client


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def npm_install(folder: Path, spec: str, binary: Path) -> str | None:
    """Install the npm package ``spec`` into ``folder`` unless ``binary`` is there already;
    None when it is there now, else what npm said. One install at a time, across runs."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return None
        if not (folder / "package.json").exists():  # npm installs here, not into a parent
            (folder / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", spec],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode == 0 and binary.exists():
            return None
        return (done.stderr or done.stdout).strip()[-2000:]


def npm_cli(package: str, version: str, folder: str, command: str) -> Path:
    """``command`` of ``package@version``, installed into ``E2E_CACHE/<folder>-<version>``
    on first use. The test skips, saying why, when npm is missing or cannot install it."""
    if shutil.which("npm") is None:
        pytest.skip(f"{package} is installed with npm, which is not on PATH")
    install = E2E_CACHE / f"{folder}-{version}"
    binary = install / "node_modules" / ".bin" / command
    failure = npm_install(install, f"{package}@{version}", binary)
    if failure is not None:
        pytest.skip(f"npm could not install {package}@{version}:\n{failure}")
    return binary


def version_of(binary: Path) -> str:
    """What ``binary --version`` prints, stripped."""
    done = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def run_agent(argv: list[str], *, timeout: float, **options: Any) -> Any:
    """``subprocess.run(argv, timeout=...)`` for an agent CLI, in a session of its own, so
    that a timeout ends all of it: the Node launchers of Codex and Gemini CLI start the
    real agent as their child, which ``subprocess.run`` would leave running."""
    with subprocess.Popen(argv, start_new_session=True, **options) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):  # what it left in its group
                os.killpg(process.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(argv, process.returncode, out, err)
