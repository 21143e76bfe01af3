"""npm packages the benchmarks compare against, installed on first use into a cache
outside the repo (``$TOOLHOST_BENCH_CACHE``, default ``~/.cache/toolhost-bench``).

A benchmark whose peer cannot be installed (no npm, no registry) raises ``Unavailable``
with the reason; ``run.py`` reports it as not run rather than as a pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


class Unavailable(Exception):
    """A peer could not be installed here; the message says why."""


def cache_root() -> Path:
    override = os.environ.get("TOOLHOST_BENCH_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "toolhost-bench"


def ensure(name: str, *packages: str, marker: str) -> Path:
    """``packages`` installed into ``<cache>/<name>``; returns that folder.

    ``marker`` is a path inside it that exists once the install is complete.
    """
    folder = cache_root() / name
    if (folder / marker).exists():
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not on PATH, so {' '.join(packages)} cannot be installed")
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"private": true}\n', encoding="utf-8")
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0 or not (folder / marker).exists():
        tail = (done.stderr or done.stdout).strip()[-400:]
        raise Unavailable(f"npm install {' '.join(packages)} failed: {tail}")
    return folder


def _command(folder_name: str, package: str, version: str, command: str) -> Path:
    """``command`` of npm ``package`` at ``version``, installed into ``folder_name``."""
    folder = ensure(
        folder_name, f"{package}@{version}", marker=f"node_modules/{package}/package.json"
    )
    binary = folder / "node_modules" / ".bin" / command
    if not binary.exists():
        raise Unavailable(f"{package} installed, but {binary} is missing")
    return binary


def opencode() -> Path:
    """OpenCode 1.18.33's binary (npm ``opencode-ai``; about 350 MB)."""
    return _command("opencode-1.18.33", "opencode-ai", "1.18.33", "opencode")


def filesystem_server() -> Path:
    """The MCP reference filesystem server's command (npm; Node.js)."""
    folder = ensure(
        "mcp-filesystem",
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        marker="node_modules/@modelcontextprotocol/server-filesystem/package.json",
    )
    return folder / "node_modules" / ".bin" / "mcp-server-filesystem"


def sandbox_runtime() -> Path:
    """Claude Code's sandbox-runtime ``srt`` 0.0.83 (npm; Node.js 22 or bubblewrap's
    helpers: ``bwrap``, ``socat`` and ``rg`` must be on PATH to run it)."""
    return _command("sandbox-runtime-0.0.83", "@anthropic-ai/sandbox-runtime", "0.0.83", "srt")


def codex() -> Path:
    """Codex CLI 0.171.0 (npm ``@openai/codex``; its native binary for this platform)."""
    return _command("codex-0.171.0", "@openai/codex", "0.171.0", "codex")
