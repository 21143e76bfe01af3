"""Where OpenCode-style config lives: the global dir and the project's ancestors."""

from __future__ import annotations

import os
from pathlib import Path


def global_config_dir() -> Path:
    """``OPENCODE_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``."""
    explicit = os.environ.get("OPENCODE_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "opencode"


def project_ancestors(directory: Path, worktree: Path) -> list[Path]:
    """``directory`` and each parent up to and including ``worktree``, nearest first.

    A directory outside the worktree yields only itself.
    """
    chain = [directory]
    if directory != worktree and worktree in directory.parents:
        for parent in directory.parents:
            chain.append(parent)
            if parent == worktree:
                break
    return chain
