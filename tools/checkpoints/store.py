"""Where checkpoints live, and what a path held: the vocabulary every part shares.

Layout, per worktree (``<data dir>/checkpoints/<key>/``, ``key`` from the worktree's
real path, the path itself in ``worktree``)::

    <checkpoint id>/meta.json        id, turnID, sessionID, title, time, client, kind
    <checkpoint id>/runs/<n>/        one per call that changed files
        log.jsonl                    what each path held before the call first touched it
        blobs/<b>                    a file's bytes (a copy, or a hard link to its old inode)
    <checkpoint id>/summary.json     written when the turn ends: before and after per path
    <checkpoint id>/restore.json     only while a restore runs (its journal)

A run's log is the capture format of ``tools.bash.sandbox.capture``: the sandbox's
supervisor writes bash's, and ``keep`` below writes the file tools'. Nothing here is
in the worktree, and nothing touches the project's git.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.truncation import data_dir

GIT = ".git"


def checkpoints_root() -> Path:
    return data_dir() / "checkpoints"


def new_checkpoint_id() -> str:
    return f"chk_{time.time_ns():x}{os.urandom(3).hex()}"  # secrets.token_hex, without hmac


def worktree_folder(worktree: Path) -> Path:
    real = os.path.realpath(worktree)
    key = hashlib.sha256(real.encode()).hexdigest()[:16]
    folder = checkpoints_root() / key
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        (folder / "worktree").write_text(real)
    return folder


def session_of(checkpoint: Path) -> str | None:
    meta = read_json(checkpoint / "meta.json")
    return str(meta.get("sessionID")) if isinstance(meta, dict) else None


def iso_time(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


def missing_parents(path: Path) -> list[Path]:
    """``path``'s folders that do not exist (nearest first)."""
    missing = []
    parent = path.parent
    while parent != parent.parent and not os.path.lexists(parent):
        missing.append(parent)
        parent = parent.parent
    return missing


def digest_file(path: str | Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


@dataclass(frozen=True)
class State:
    """What a path holds: ``absent``, ``file`` (sha256, mode), ``symlink`` (its target),
    ``dir`` (mode) or ``other``. Comparable: two equal States are the same content."""

    kind: str
    sha: str = ""
    mode: int = 0
    link: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "file":
            out.update(sha256=self.sha, mode=self.mode)
        elif self.kind == "dir":
            out["mode"] = self.mode
        elif self.kind == "symlink":
            out["link"] = self.link
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        return cls(
            str(data["kind"]),
            str(data.get("sha256", "")),
            int(data.get("mode") or 0),
            str(data.get("link", "")),
        )


def state_of(path: str | Path) -> State:
    """What ``path`` holds now (a file is hashed)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return State("absent")
    if stat.S_ISREG(info.st_mode):
        return State("file", digest_file(path), stat.S_IMODE(info.st_mode))
    if stat.S_ISLNK(info.st_mode):
        return State("symlink", link=os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return State("dir", mode=stat.S_IMODE(info.st_mode))
    return State("other", mode=stat.S_IMODE(info.st_mode))


@dataclass(frozen=True)
class Before:
    """What a path held before a run touched it: its state and, for a file, the blob
    with its bytes (a path relative to the worktree's checkpoint folder)."""

    path: str
    kind: str
    t: int  # CLOCK_MONOTONIC ns: the order of the runs of a turn
    mode: int = 0
    link: str = ""
    blob: str = ""

    def state(self, folder: Path) -> State:
        if self.kind == "file":
            return State("file", digest_file(folder / self.blob), self.mode)
        return State(self.kind, mode=self.mode if self.kind == "dir" else 0, link=self.link)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "t": self.t}
        if self.mode:
            out["mode"] = self.mode
        if self.link:
            out["link"] = self.link
        if self.blob:
            out["blob"] = self.blob
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Before:
        return cls(
            str(data["path"]),
            str(data["kind"]),
            int(data.get("t", 0)),
            int(data.get("mode") or 0),
            str(data.get("link", "")),
            str(data.get("blob", "")),
        )


def read_run(run: Path, relative_to: Path) -> list[Before]:
    """A run's log; blob names become paths relative to ``relative_to``."""
    try:
        lines = (run / "log.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    found = []
    prefix = os.path.relpath(run / "blobs", relative_to)
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue  # the last line of a run killed while writing it
        if "path" not in data or "kind" not in data:
            continue
        if data.get("blob"):
            data["blob"] = f"{prefix}/{data['blob']}"
        found.append(Before.from_json(data))
    return found


class Run:
    """A run folder the sidecar itself writes (the file tools', a restore's)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "blobs").mkdir(parents=True, exist_ok=True)
        self._count = 0
        self.kept: set[str] = set()

    def keep(self, path: str, *, link: bool = False) -> None:
        """Keep what ``path`` holds now, once. ``link``: the path is about to be replaced
        by a rename or removed (never written in place), so a hard link keeps its bytes."""
        if path in self.kept:
            return
        self.kept.add(path)
        entry: dict[str, Any] = {"path": path, "t": time.monotonic_ns()}
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is None:
            entry["kind"] = "absent"
        elif stat.S_ISREG(info.st_mode):
            self._count += 1
            name = str(self._count)
            _keep_bytes(path, self.folder / "blobs" / name, link=link)
            entry.update(kind="file", mode=stat.S_IMODE(info.st_mode), blob=name)
        elif stat.S_ISLNK(info.st_mode):
            entry.update(kind="symlink", link=os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            entry.update(kind="dir", mode=stat.S_IMODE(info.st_mode))
        else:
            entry.update(kind="other", mode=stat.S_IMODE(info.st_mode))
        with open(self.folder / "log.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _keep_bytes(path: str, target: Path, *, link: bool) -> None:
    if link:
        try:
            os.link(path, target, follow_symlinks=False)
            return
        except OSError:
            pass  # another file system: copy
    shutil.copyfile(path, target, follow_symlinks=False)


def inside_git(path: str, roots: list[str]) -> bool:
    """True for a path in a ``.git`` folder of one of ``roots`` (git's own files)."""
    for root in roots:
        if path.startswith(root.rstrip("/") + "/"):
            return GIT in path[len(root) :].split("/")
    return False


def read_json(path: Path) -> Any:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    return None


def write_json(path: Path, data: Any, *, compact: bool = False) -> None:
    """Atomically (a temp file renamed over); ``compact`` for big ones (no indent: the
    C encoder)."""
    temp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    text = json.dumps(data, ensure_ascii=False, indent=None if compact else 1)
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
