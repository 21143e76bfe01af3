"""Lock files: how a client finds a running sidecar and proves it may talk to it.

Each sidecar that can be attached to writes one file, ``sidecar-<pid>.json``, into
the user's runtime dir (``platformdirs.user_runtime_dir("toolhost")``, mode 0700).
The file is mode 0600, written atomically, and removed when the sidecar exits; a
reader skips (and removes) the files of processes that are gone.  It holds the
sidecar's 128-bit token, which a client must present before any request runs
(``docs/protocol.md``, "Attach"), and what a client needs to pick the right
sidecar: workspace folders, transport, address, editor.

The API is small on purpose (``toolhost mcp`` uses it for its Unix socket too)::

    token = new_token()
    path = write(LockInfo(token=token, workspace_folders=[root], transport="tcp",
                          host="127.0.0.1", port=port))
    ...
    write(replace(info, editor="Neovim"))   # rewrite it when more is known
    remove(path)                            # on exit
    for sidecar in discover(workspace=root): ...

Only this user can read the files (the directory is 0700 and each file 0600), so the
token is as private as the user's own files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import stat
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from server import __version__

log = logging.getLogger("toolhost.lockfile")

VERSION = 1
TOKEN_BYTES = 16  # 128 bits
PREFIX, SUFFIX = "sidecar-", ".json"

Transport = Literal["stdio", "tcp", "ws"]
TRANSPORTS = ("stdio", "tcp", "ws")


@dataclass(frozen=True)
class LockInfo:
    """One sidecar's lock file (the wire names are in ``to_json``)."""

    token: str
    transport: Transport
    workspace_folders: Sequence[str] = ()  # kept as a tuple of absolute paths
    host: str | None = None
    port: int | None = None
    socket: str | None = None  # a Unix socket's absolute path (mode 0600)
    editor: str = "unknown"  # clientInfo.name
    pid: int = field(default_factory=os.getpid)
    toolhost: str = __version__
    path: Path | None = field(default=None, compare=False)  # where it was read from

    def __post_init__(self) -> None:
        folders = tuple(os.path.abspath(f) for f in self.workspace_folders)
        object.__setattr__(self, "workspace_folders", folders)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": VERSION,
            "pid": self.pid,
            "token": self.token,
            "workspaceFolders": list(self.workspace_folders),
            "transport": self.transport,
            "editor": self.editor,
            "toolhost": self.toolhost,
        }
        for name in ("host", "port", "socket"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    @classmethod
    def from_json(cls, data: Any, path: Path | None = None) -> LockInfo:
        """Raises ValueError when ``data`` is not a lock file of this version."""
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("not a version 1 toolhost lock file")
        pid, token, transport = data.get("pid"), data.get("token"), data.get("transport")
        folders = data.get("workspaceFolders", [])
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ValueError("pid must be a positive integer")
        if not isinstance(token, str) or len(token) != 2 * TOKEN_BYTES:
            raise ValueError("token must be 32 hex digits")
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}")
        if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
            raise ValueError("workspaceFolders must be a list of paths")
        port = data.get("port")
        if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
            raise ValueError("port must be an integer")
        host, sock, editor = data.get("host"), data.get("socket"), data.get("editor", "unknown")
        for name, value in (("host", host), ("socket", sock), ("editor", editor)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string")
        return cls(
            token=token,
            transport=transport,
            workspace_folders=tuple(folders),
            host=host,
            port=port,
            socket=sock,
            editor=editor,
            pid=pid,
            toolhost=str(data.get("toolhost", "")),
            path=path,
        )


def new_token() -> str:
    """128 bits from the OS's CSPRNG, as 32 hex digits."""
    return secrets.token_hex(TOKEN_BYTES)


def tokens_match(presented: object, token: str) -> bool:
    """Constant-time comparison (a timing difference must not reveal the token)."""
    if not isinstance(presented, str):
        return False
    return secrets.compare_digest(presented.encode("utf-8", "replace"), token.encode())


def runtime_dir() -> Path:
    """The lock file directory, created mode 0700; refused when someone else could write it."""
    import platformdirs

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        directory = Path(platformdirs.user_runtime_dir("toolhost", ensure_exists=False))
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{directory} is not a directory owned by this user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, 0o700)
    return directory


def lock_path(pid: int | None = None, directory: Path | None = None) -> Path:
    return (directory or runtime_dir()) / f"{PREFIX}{pid or os.getpid()}{SUFFIX}"


def write(info: LockInfo, directory: Path | None = None) -> Path:
    """Write (or rewrite) ``info``'s lock file atomically, mode 0600; returns its path."""
    directory = directory or runtime_dir()
    path = lock_path(info.pid, directory)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)  # mkstemp makes it 0600 already; say so anyway
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(info.to_json(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def remove(path: Path) -> None:
    """Remove a lock file; one already gone is fine."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def discover(workspace: Path | None = None, directory: Path | None = None) -> list[LockInfo]:
    """The live sidecars' lock files, newest first; ``workspace``: only those serving it.

    Files of dead processes are removed; unreadable, malformed or foreign files
    (another owner, a mode other users could read) are skipped.
    """
    directory = directory or runtime_dir()
    wanted = os.path.realpath(workspace) if workspace is not None else None
    found: list[tuple[float, LockInfo]] = []
    for entry in directory.glob(f"{PREFIX}*{SUFFIX}"):
        info, mtime = _read(entry)
        if info is None:
            continue
        if not _alive(info.pid):
            log.info("removing the lock file of exited sidecar %d", info.pid)
            remove(entry)
            continue
        folders = [os.path.realpath(f) for f in info.workspace_folders]
        if wanted is not None and wanted not in folders:
            continue
        found.append((mtime, info))
    found.sort(key=lambda item: item[0], reverse=True)
    return [info for _, info in found]


def _read(path: Path) -> tuple[LockInfo | None, float]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None, 0.0
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or stat.S_IMODE(info.st_mode) & 0o077
        ):
            log.warning("skipping %s: not a private file of this user", path)
            return None, 0.0
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = json.loads(handle.read(64 * 1024))
        return LockInfo.from_json(data, path), info.st_mtime
    except (OSError, ValueError) as error:
        log.warning("skipping %s: %s", path, error)
        return None, 0.0
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, though not ours
        return True
    return True


__all__ = [
    "LockInfo",
    "discover",
    "lock_path",
    "new_token",
    "remove",
    "runtime_dir",
    "tokens_match",
    "write",
]
