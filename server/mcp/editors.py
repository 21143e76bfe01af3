"""Which editor's sidecar ``toolhost mcp`` attaches to.

The candidates are the live sidecars whose lock file names a socket.  The one
whose workspace folder contains the working directory wins; when several do, the
innermost folder wins (a project opened inside a bigger one), then the most
recently started sidecar.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from server.lockfile import LockInfo, discover


def _contains(folder: str, directory: str) -> bool:
    folder = os.path.realpath(folder)
    return directory == folder or directory.startswith(folder.rstrip(os.sep) + os.sep)


def matching_folder(lock: LockInfo, directory: Path) -> str | None:
    """The innermost of the lock's workspace folders that contains ``directory``."""
    real = os.path.realpath(directory)
    inside = [f for f in lock.workspace_folders if _contains(f, real)]
    return max(inside, key=len) if inside else None


def ranked(directory: Path) -> list[tuple[LockInfo, str | None]]:
    """Every sidecar that can be attached to, best first, with its matching folder."""
    try:
        locks = discover()
    except OSError:  # no runtime dir of ours: no sidecar to attach to
        return []
    found = [(lock, matching_folder(lock, directory)) for lock in locks if lock.socket]

    def rank(item: tuple[LockInfo, str | None]) -> tuple[int, int, float]:
        lock, folder = item
        try:
            started = lock.path.stat().st_mtime if lock.path else 0.0
        except OSError:
            started = 0.0
        return (folder is not None, len(folder or ""), started)

    return sorted(found, key=rank, reverse=True)


def choose_editor(directory: Path) -> LockInfo | None:
    """The sidecar to attach to for ``directory``, or None."""
    for lock, folder in ranked(directory):
        if folder is not None:
            return lock
    return None


def print_editors(directory: Path, *, as_json: bool = False) -> int:
    editors = ranked(directory)
    chosen = choose_editor(directory)
    if as_json:
        listing: list[dict[str, Any]] = [
            {
                "pid": lock.pid,
                "editor": lock.editor,
                "workspaceFolders": list(lock.workspace_folders),
                "socket": lock.socket,
                "toolhost": lock.toolhost,
                "chosen": lock == chosen,
            }
            for lock, _ in editors
        ]
        print(json.dumps({"directory": str(directory), "editors": listing}, indent=2))
        return 0
    if not editors:
        print(f"No editor's toolhost is running; toolhost mcp in {directory} would serve it alone.")
        return 0
    for lock, _ in editors:
        mark = "*" if lock == chosen else " "
        folders = ", ".join(lock.workspace_folders)
        print(f"{mark} {lock.editor} (pid {lock.pid}, toolhost {lock.toolhost}): {folders}")
    if chosen is None:
        print(f"\nNone of them has {directory} open: toolhost mcp would serve it alone.")
    else:
        print(f"\n* toolhost mcp in {directory} attaches to this one.")
    return 0
