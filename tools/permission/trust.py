"""Whether a folder is trusted: may its own config loosen the rules, may its tools run?

A cloned repository can ship ``opencode.json`` (``"permission": "allow"``) and
``.opencode/tools/*.py`` (imported, so run, the moment they load).  Neither is used
until a person trusts the folder:

- the editor says so: ``initializationOptions.trusted`` (VS Code's workspace trust,
  Neovim's ``vim.secure.trust()`` of the folder); ``false`` always wins;
- the command line says so: ``toolhost … --trusted``;
- otherwise the trust store says so: ``toolhost trust`` records the folder with a
  hash of its project config and tool files (as Neovim's ``vim.secure`` keys a file
  by its content), so a change to any of them needs trusting again.  A folder with
  no project config or tools has nothing to distrust.

An untrusted folder's project files are read for what they forbid only (their
denials, the tools they switch off), its project tools are not loaded or watched,
and every tool but the read-only ones asks first (``tools.config.rules``).

The store is ``platformdirs.user_state_dir("toolhost")/trust.json`` (mode 0600):
``{"version": 1, "folders": {"/real/path": {"hash": "…", "files": [...], "at": "…"}}}``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.config.files import PROJECT_DIR_FILES, PROJECT_FILES
from tools.custom.discovery import FOLDER_NAMES, TOOL_SUFFIXES

log = logging.getLogger("toolhost.trust")

VERSION = 1


@dataclass(frozen=True)
class Trust:
    trusted: bool
    reason: str  # for a person: why (and, when untrusted, how to trust it)
    source: str  # "editor", "command line", "store", "nothing to trust"

    def __bool__(self) -> bool:
        return self.trusted


def project_files(worktree: Path) -> list[Path]:
    """The files that would change what the agent may do: project config and tool files."""
    root = Path(os.path.abspath(worktree))
    found = [root / name for name in PROJECT_FILES]
    found += [root / ".opencode" / name for name in PROJECT_DIR_FILES]
    found = [path for path in found if path.is_file()]
    for name in FOLDER_NAMES:
        folder = root / ".opencode" / name
        with contextlib.suppress(OSError):
            found += sorted(
                path
                for path in folder.iterdir()
                if path.suffix in TOOL_SUFFIXES and not path.name.endswith(".d.ts")
            )
    return found


def fingerprint(worktree: Path) -> tuple[str, list[str]]:
    """A hash over every project file's name and content, and the names (relative)."""
    import hashlib  # only a folder with project files is hashed

    root = Path(os.path.abspath(worktree))
    digest = hashlib.sha256()
    names = []
    for path in project_files(root):
        name = path.relative_to(root).as_posix()
        try:
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            content = "unreadable"
        names.append(name)
        digest.update(f"{name}\0{content}\n".encode())
    return digest.hexdigest(), names


def store_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("toolhost")) / "trust.json"


def _load() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning(
            "the trust store %s is unreadable (%s): no folder counts as trusted",
            store_path(),
            error,
        )
        return {}
    folders = data.get("folders") if isinstance(data, dict) else None
    return folders if isinstance(folders, dict) else {}


def _save(folders: dict[str, Any]) -> None:
    import tempfile

    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"version": VERSION, "folders": folders}, handle, indent=2)
        os.chmod(tmp, stat.S_IRUSR | stat.S_IWUSR)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _key(worktree: Path) -> str:
    return os.path.realpath(worktree)


def trust(worktree: Path) -> list[str]:
    """Record the folder as trusted with its current files; returns their names."""
    import datetime

    digest, names = fingerprint(worktree)
    folders = _load()
    folders[_key(worktree)] = {
        "hash": digest,
        "files": names,
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    _save(folders)
    return names


def revoke(worktree: Path) -> bool:
    """Forget the folder; True when it was in the store."""
    folders = _load()
    if folders.pop(_key(worktree), None) is None:
        return False
    _save(folders)
    return True


def stored(worktree: Path) -> bool:
    """True when the store trusts the folder with exactly its current files."""
    entry = _load().get(_key(worktree))
    return isinstance(entry, dict) and entry.get("hash") == fingerprint(worktree)[0]


def decide(worktree: Path, editor: bool | None = None, command_line: bool = False) -> Trust:
    """Whether ``worktree`` is trusted now, and why (see the module docstring)."""
    if editor is False:
        return Trust(False, "the editor does not trust this folder", "editor")
    if editor is True:
        return Trust(True, "the editor trusts this folder", "editor")
    if command_line:
        return Trust(True, "trusted on the command line (--trusted)", "command line")
    files = project_files(worktree)
    if not files:
        return Trust(True, "it has no project config or tools", "nothing to trust")
    if stored(worktree):
        return Trust(True, "trusted with `toolhost trust` (these files, unchanged)", "store")
    names = ", ".join(path.relative_to(os.path.abspath(worktree)).as_posix() for path in files)
    return Trust(
        False,
        f"it has project config or tools ({names}) that were never trusted; trust the "
        "folder in the editor, pass --trusted, or run `toolhost trust` in it",
        "store",
    )
