"""Sidecar lock files (contract A): how ``toolhost mcp`` finds an editor's sidecar.

One file per sidecar, ``sidecar-<pid>.json`` in ``user_runtime_dir("toolhost")``
(mode 0700), itself mode 0600, written atomically and removed on exit; a reader
skips and removes files whose process is gone.  Fields: ``version`` (1), ``pid``,
``token`` (128-bit hex, presented by a client before any request runs),
``workspaceFolders``, ``transport``, ``host``/``port`` or ``socket``, ``editor``,
``toolhost``.

The ``security`` branch owns the lock file module; this is the reading and writing
the attach feature needs, to the same contract.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("toolhost.locks")

VERSION = 1
PREFIX, SUFFIX = "sidecar-", ".json"


def runtime_dir(create: bool = True) -> Path:
    """The private folder for lock files and sockets (0700, ours), created if asked."""
    import platformdirs

    with warnings.catch_warnings():  # no XDG_RUNTIME_DIR: platformdirs warns and uses /tmp
        warnings.simplefilter("ignore")
        path = Path(platformdirs.user_runtime_dir("toolhost"))
    if create:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(f"{path} is not a folder of this user; toolhost will not use it")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)
    return path


def new_token() -> str:
    return secrets.token_hex(16)


@dataclass(frozen=True)
class SidecarLock:
    path: Path
    pid: int
    token: str
    workspace_folders: tuple[str, ...]
    transport: str
    editor: str = "unknown"
    toolhost: str = ""
    socket: str | None = None
    host: str | None = None
    port: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"file": str(self.path), **self.raw}


def write_lock(fields: dict[str, Any], directory: Path | None = None) -> Path:
    """Write this process's lock file atomically (mode 0600); its path."""
    directory = directory or runtime_dir()
    pid = os.getpid()
    data = {"version": VERSION, "pid": pid, **fields}
    final = directory / f"{PREFIX}{pid}{SUFFIX}"
    temporary = directory / f".{PREFIX}{pid}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(data, out)
        os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return final


def remove_lock(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def read_locks(directory: Path | None = None) -> list[SidecarLock]:
    """Every live sidecar's lock file; the files of dead processes are removed."""
    try:
        directory = directory or runtime_dir(create=False)
        entries = sorted(directory.glob(f"{PREFIX}*{SUFFIX}"))
    except OSError:
        return []
    found = []
    for path in entries:
        lock = _read(path)
        if lock is None:
            continue
        if not _alive(lock.pid):
            log.debug("removing the lock file of ended process %d", lock.pid)
            remove_lock(path)
            if lock.socket and Path(lock.socket).parent == directory:
                remove_lock(Path(lock.socket))
            continue
        found.append(lock)
    return found


def _read(path: Path) -> SidecarLock | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            log.warning("ignoring %s: not a private file of this user", path)
            return None
        with os.fdopen(fd, "rb") as stream:
            fd = -1
            data = json.loads(stream.read(1 << 20))
    except (OSError, ValueError) as error:
        log.debug("ignoring %s: %s", path, error)
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    try:
        folders = data.get("workspaceFolders") or []
        return SidecarLock(
            path=path,
            pid=int(data["pid"]),
            token=str(data["token"]),
            workspace_folders=tuple(str(f) for f in folders),
            transport=str(data.get("transport", "stdio")),
            editor=str(data.get("editor") or "unknown"),
            toolhost=str(data.get("toolhost") or ""),
            socket=data.get("socket") if isinstance(data.get("socket"), str) else None,
            host=data.get("host") if isinstance(data.get("host"), str) else None,
            port=data.get("port") if isinstance(data.get("port"), int) else None,
            raw=data,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        log.debug("ignoring %s: %s", path, error)
        return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
