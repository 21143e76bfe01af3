"""Where custom tool files live, and a fingerprint of them for hot reload.

Folders (not recursive), lowest precedence first: the global config dir's ``tool/``
and ``tools/``, then ``.opencode/tool/`` and ``.opencode/tools/`` in each ancestor
of the project directory from the worktree root down, so the nearest one wins.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tools.config.dirs import global_config_dir, project_ancestors

TOOL_SUFFIXES = (".py", ".js", ".ts")
FOLDER_NAMES = ("tool", "tools")  # OpenCode scans both; the plural is the documented one


@dataclass(frozen=True)
class ToolFile:
    path: Path
    layer: int  # higher wins when two layers define the same tool id

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def is_python(self) -> bool:
        return self.path.suffix == ".py"


def layers(directory: Path, worktree: Path, project: bool = True) -> list[list[Path]]:
    """The tool folders as precedence layers, lowest first; each folder appears once.

    ``project`` False (an untrusted folder, ``tools.permission.trust``): the global folders only.
    """
    bases = [global_config_dir()]
    if project:
        bases += [base / ".opencode" for base in reversed(project_ancestors(directory, worktree))]
    found: list[list[Path]] = []
    seen: dict[str, int] = {}
    for base in bases:
        layer: list[Path] = []
        for name in FOLDER_NAMES:
            folder = base / name
            identity = os.path.realpath(folder)
            # OPENCODE_CONFIG_DIR may be the project's own .opencode: keep the later layer.
            if identity in seen:
                earlier = found[seen[identity]]
                earlier[:] = [f for f in earlier if os.path.realpath(f) != identity]
            seen[identity] = len(found)
            layer.append(folder)
        found.append(layer)
    return found


def watch_dirs(directory: Path, worktree: Path, project: bool = True) -> list[Path]:
    """Every folder a tool file may be added to (existing or not), for a file watcher."""
    return [folder for layer in layers(directory, worktree, project) for folder in layer]


def scan(directory: Path, worktree: Path, project: bool = True) -> list[ToolFile]:
    """The tool files, in precedence order (lowest first), each folder sorted by name."""
    files: list[ToolFile] = []
    for rank, layer in enumerate(layers(directory, worktree, project)):
        for folder in layer:
            files += [ToolFile(path, rank) for path in _tool_files(folder)]
    return files


def _tool_files(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        path
        for path in entries
        if path.suffix in TOOL_SUFFIXES
        and not path.name.endswith(".d.ts")
        and path.name != "__init__.py"
        and path.is_file()
    ]


def digest(path: Path) -> str | None:
    """Content hash: a same-size rewrite within the clock's resolution still counts."""
    import hashlib  # only where tool files exist: not for every listing

    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None
