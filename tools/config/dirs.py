"""Where OpenCode-style config lives: the global dir and the project's ancestors."""

from __future__ import annotations

import functools
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


def runtime_dirs() -> list[str]:
    """Every folder toolhost's runtime folder (lock files with tokens, sockets) may be.

    platformdirs takes ``$XDG_RUNTIME_DIR`` when it is a private folder of this user,
    else ``/run/user/<uid>``, else ``runtime-<uid>`` in the temp folder: all of them,
    since which one a sidecar chose depends on its environment, not ours.
    """
    import tempfile

    uid = os.getuid()
    bases = [
        os.environ.get("XDG_RUNTIME_DIR") or "",
        f"/run/user/{uid}",
        os.path.join(tempfile.gettempdir(), f"runtime-{uid}"),
        f"/tmp/runtime-{uid}",
    ]
    return list(dict.fromkeys(os.path.join(base, "toolhost") for base in bases if base))


def state_dir() -> str:
    """toolhost's state folder, where the trust store lives (as platformdirs finds it)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return os.path.join(os.path.expanduser(state), "toolhost")


def relay_runtime_patterns() -> list[str]:
    """Where ``toolhost acp`` makes the private runtime folders of its relays (each holds
    a lock file with a token), as ``fnmatch`` patterns."""
    import tempfile

    temps = dict.fromkeys(("/tmp", tempfile.gettempdir()))
    return [os.path.join(base, "toolhost-acp-*") for base in temps]


def secret_dirs(*, relays: bool = True) -> list[str]:
    """toolhost's folders no tool may reach: the runtime folders (the relays' that
    exist now included, unless ``relays`` is false) and the trust store's."""
    from tools.fsio.listing import matching  # the temp folder, listed again only if changed

    patterns = relay_runtime_patterns() if relays else []
    found = [path for pattern in patterns for path in matching(pattern)]
    return [*runtime_dirs(), *sorted(found), state_dir()]


class OwnFolders:
    """toolhost's own folders, no tool may reach them: as text, each also with a trailing
    slash, so the guard's test of a path is one C-level call per kind."""

    __slots__ = ("folders", "relays", "under_folders")

    def __init__(self, folders: tuple[str, ...], relays: tuple[str, ...]) -> None:
        self.folders = folders  # the runtime folders and the trust store's
        self.under_folders = tuple(f + "/" for f in folders)
        self.relays = relays  # what a relay's folder's path starts with (toolhost-acp-)


def own_folders() -> OwnFolders:
    """toolhost's folders as this process's environment places them now."""
    environ = os.environ
    return _own_folders(
        environ.get("XDG_RUNTIME_DIR"), environ.get("XDG_STATE_HOME"), environ.get("HOME")
    )


@functools.lru_cache(maxsize=8)
def _own_folders(*_inputs: str | None) -> OwnFolders:
    """toolhost's folders, worked out once per environment (what they derive from)."""
    folders = (*runtime_dirs(), state_dir())
    return OwnFolders(folders, tuple(p.removesuffix("*") for p in relay_runtime_patterns()))
