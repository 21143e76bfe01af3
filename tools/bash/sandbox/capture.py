"""What a command's path-changing system calls are about to change, kept before they run.

The supervisor gets each call ``notify``'s filter stopped, finds the path it names as
the process would (its cwd, its directory fd, its root), and, the first time this
run touches that path, keeps what it holds now in the run's capture folder:

- a file about to be written in place (opened for writing, truncated, fallocated):
  a copy of its bytes (a reflink where the file system can, else a kernel copy);
- a file about to be unlinked, renamed away or over, or chmodded: a hard link to it
  (nothing is copied: its inode, and so its bytes, live on in the folder), with its
  mode; a later in-place write to that inode by this run first turns the link into a
  copy. On another file system than the folder, a copy;
- a symlink: its target; a directory: its mode (and, when renamed away, every path
  below it the same way); a path that does not exist: that it did not.

Then the call goes on (or the supervisor makes it: ``creations``). Paths outside
the capture's roots, below its ``skip`` folders (the command's own temp directory)
or inside a ``.git`` folder are not kept: git's own files are git's (a restore
leaves HEAD, refs, the index and objects alone).

The folder: ``log.jsonl``, one JSON line per path as first touched
(``{path, kind, mode?, link?, blob?, t}``, ``t`` from CLOCK_MONOTONIC so that the
sidecar can order the runs of one turn), and ``blobs/<n>``. A race is possible by
design: a thread that rewrites the path between the capture and the call can make
the call reach a path that was not kept; the turn's closing scan still sees it
changed.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import time
from typing import Any

from tools.bash.sandbox.notify import Notification, read_bytes, read_string, signed, table

FICLONE = 0x40049409
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_REMOVEDIR = 0x200

# How each call names what it changes: ("path", path arg, dirfd arg or None, effect)
# or ("fd", fd arg, effect). Effects: "write" (bytes change in place), "replace" (the
# name goes away or is replaced: unlink, rename), "create" (a new name), "mode".
_Spec = tuple[tuple[Any, ...], ...]
_SPECS: dict[str, _Spec] = {
    "open": (("open", 0, None, 1),),
    "creat": (("path", 0, None, "write"),),
    "openat": (("open", 1, 0, 2),),
    "openat2": (("open2", 1, 0, 2),),
    "truncate": (("path", 0, None, "write"),),
    "ftruncate": (("fd", 0, "write"),),
    "fallocate": (("fd", 0, "write"),),
    "rename": (("path", 0, None, "away"), ("path", 1, None, "away")),
    "renameat": (("path", 1, 0, "away"), ("path", 3, 2, "away")),
    "renameat2": (("path", 1, 0, "away"), ("path", 3, 2, "away")),
    "link": (("path", 1, None, "create"),),
    "linkat": (("path", 3, 2, "create"),),
    "symlink": (("path", 1, None, "create"),),
    "symlinkat": (("path", 2, 1, "create"),),
    "unlink": (("path", 0, None, "replace"),),
    "unlinkat": (("path", 1, 0, "replace"),),
    "rmdir": (("path", 0, None, "replace"),),
    "mkdir": (("path", 0, None, "create"),),
    "mkdirat": (("path", 1, 0, "create"),),
    "mknod": (("path", 0, None, "create"),),
    "mknodat": (("path", 1, 0, "create"),),
    "chmod": (("path", 0, None, "mode"),),
    "fchmod": (("fd", 0, "mode"),),
    "fchmodat": (("path", 1, 0, "mode"),),
    "fchmodat2": (("path", 1, 0, "mode"),),
}
_TABLE = table()
_NAMES: dict[int, str] = _TABLE.names() if _TABLE is not None else {}


class Recorder:
    """One run's capture: its folder, what it has kept so far (``stops`` hands it each
    stopped call before the call goes on)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.folder = str(spec["folder"])
        self.roots = [os.path.realpath(r) for r in spec.get("roots", [])]
        self.skip = [os.path.realpath(s) for s in spec.get("skip", [])]
        self.blobs = os.path.join(self.folder, "blobs")
        os.makedirs(self.blobs, exist_ok=True)
        self.log = os.open(
            os.path.join(self.folder, "log.jsonl"),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
            0o600,
        )
        self.seen: set[str] = set()
        self.linked: dict[tuple[int, int], list[str]] = {}  # inode -> blobs linked to it
        self.count = 0

    def record(self, notification: Notification) -> None:
        """Keep what the stopped call is about to change (never raises: an error is
        noted in the log, and the call still goes on)."""
        try:
            self._capture(notification)
        except Exception as error:  # never keep a command stopped: note it, go on
            self._note({"error": f"{type(error).__name__}: {error}"})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.log)

    # ---------------------------------------------------------------- the calls

    def _capture(self, notification: Notification) -> None:
        name = _NAMES.get(notification.nr)
        if name is None:
            return
        args = notification.args
        if name.startswith("rename"):
            self._rename(notification, name)
            return
        for spec in _SPECS[name]:
            kind = spec[0]
            if kind == "fd":
                path = _fd_path(notification.pid, signed(args[spec[1]]))
                effect = spec[2]
                follow = True
            else:
                dirfd = AT_FDCWD if spec[2] is None else signed(args[spec[2]])
                raw = read_string(notification.pid, args[spec[1]])
                if raw is None:
                    continue
                effect, follow = self._effect(name, spec, notification, args)
                if effect is None:
                    continue
                path = _resolve(notification.pid, dirfd, raw, follow=follow)
            if path is None or not self._kept_here(path):
                continue
            self._before(path, effect)

    def _rename(self, notification: Notification, name: str) -> None:
        """Both names and everything below them; a name that appears below the other
        (a folder moved into place) did not exist before, and is kept as such."""
        ends = []
        for spec in _SPECS[name]:
            dirfd = AT_FDCWD if spec[2] is None else signed(notification.args[spec[2]])
            raw = read_string(notification.pid, notification.args[spec[1]])
            ends.append(
                None if raw is None else _resolve(notification.pid, dirfd, raw, follow=False)
            )
        source, target = ends
        for one, other in ((source, target), (target, source)):
            if one is None or not self._kept_here(one):
                continue
            self._before(one, "away")
            if other is None or not self._kept_here(other):
                continue
            for below in _tree(one):
                mirrored = other + below[len(one) :]
                if mirrored not in self.seen and self._kept_here(mirrored):
                    self._keep(mirrored, copy=False)

    def _effect(
        self, name: str, spec: tuple[Any, ...], notification: Notification, args: tuple[int, ...]
    ) -> tuple[str | None, bool]:
        kind = spec[0]
        if kind == "open":
            flags = args[spec[3]] & 0xFFFFFFFF
            return _open_effect(flags)
        if kind == "open2":
            how = read_bytes(notification.pid, args[spec[3]], 8)
            flags = int.from_bytes(how, "little") if how else os.O_RDWR
            return _open_effect(flags)
        effect = str(spec[3])
        follow = effect in ("write", "mode")
        if name == "fchmodat2" and args[3] & AT_SYMLINK_NOFOLLOW:
            follow = False
        if name == "unlinkat" and not args[2] & AT_REMOVEDIR:
            effect = "replace"
        return effect, follow

    def _kept_here(self, path: str) -> bool:
        for skipped in self.skip:
            if _inside(path, skipped):
                return False
        for root in self.roots:
            if _inside(path, root):
                rest = path[len(root) :].split(os.sep)
                return ".git" not in rest
        return False

    # ---------------------------------------------------------------- keeping

    def _before(self, path: str, effect: str) -> None:
        if effect == "write":
            self._unlink_blobs_of(path)
        if path in self.seen:
            return
        if effect == "away":
            self._keep_tree(path)
        else:
            self._keep(path, copy=effect == "write")

    def _keep_tree(self, path: str) -> None:
        self._keep(path, copy=False)
        for below in _tree(path):
            if below not in self.seen and self._kept_here(below):
                self._keep(below, copy=False)

    def _keep(self, path: str, *, copy: bool) -> None:
        self.seen.add(path)
        info = _lstat(path)
        entry: dict[str, Any] = {"path": path, "t": time.monotonic_ns()}
        if info is None:
            entry["kind"] = "absent"
        elif stat.S_ISREG(info.st_mode):
            entry.update(kind="file", mode=stat.S_IMODE(info.st_mode))
            entry["blob"] = self._blob(path, info, copy=copy)
        elif stat.S_ISLNK(info.st_mode):
            entry.update(kind="symlink", link=os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            entry.update(kind="dir", mode=stat.S_IMODE(info.st_mode))
        else:
            entry.update(kind="other", mode=stat.S_IMODE(info.st_mode))
        self._note(entry)

    def _blob(self, path: str, info: os.stat_result, *, copy: bool) -> str:
        self.count += 1
        name = str(self.count)
        target = os.path.join(self.blobs, name)
        if not copy:
            try:
                os.link(path, target, follow_symlinks=False)
            except OSError as error:
                if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                    raise
            else:
                self.linked.setdefault((info.st_dev, info.st_ino), []).append(target)
                return name
        _copy(path, target)
        return name

    def _unlink_blobs_of(self, path: str) -> None:
        """An in-place write is coming to ``path``'s inode: blobs that are hard links to
        it become copies first, so they keep the bytes as they were."""
        if not self.linked:
            return
        try:
            info = os.stat(path)
        except OSError:
            return
        for blob in self.linked.pop((info.st_dev, info.st_ino), []):
            fresh = blob + ".copy"
            _copy(blob, fresh)
            os.rename(fresh, blob)

    def _note(self, entry: dict[str, Any]) -> None:
        os.write(self.log, (json.dumps(entry, ensure_ascii=False) + "\n").encode())


def _tree(path: str) -> list[str]:
    """Every path below the folder ``path`` (none when it is not a folder)."""
    info = _lstat(path)
    if info is None or not stat.S_ISDIR(info.st_mode):
        return []
    found = []
    for folder, dirs, files in os.walk(path):
        found += [os.path.join(folder, name) for name in [*dirs, *files]]
    return found


def _open_effect(flags: int) -> tuple[str | None, bool]:
    if not flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
        return None, True
    follow = not flags & os.O_NOFOLLOW and not (flags & os.O_CREAT and flags & os.O_EXCL)
    if flags & getattr(os, "O_TMPFILE", 0) == getattr(os, "O_TMPFILE", -1):
        return None, True  # an unnamed file: linkat names it later
    return "write", follow


def _fd_path(pid: int, fd: int) -> str | None:
    try:
        path = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    return path if path.startswith("/") else None


def _resolve(pid: int, dirfd: int, raw: str, *, follow: bool) -> str | None:
    """The path the process names, in the supervisor's view (the sandbox binds every
    writable path onto itself, so the two agree)."""
    if not raw.startswith("/"):
        base = f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
        try:
            base = os.readlink(base)
        except OSError:
            return None
        if not base.startswith("/"):
            return None
        raw = os.path.join(base, raw)
    raw = os.path.normpath(raw)
    parent, name = os.path.split(raw)
    if not name:
        return raw
    parent = os.path.realpath(parent)
    path = os.path.join(parent, name)
    if follow and os.path.islink(path):
        return os.path.realpath(path)
    return path


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _copy(source: str, target: str) -> None:
    """``source``'s bytes into a new file ``target``: a reflink where possible."""
    with open(source, "rb") as src, open(target, "xb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
            return
        except OSError:
            pass
        size = os.fstat(src.fileno()).st_size
        try:
            while os.copy_file_range(src.fileno(), dst.fileno(), max(size, 1 << 20)):
                pass
        except OSError:  # not between these file systems: copy through memory
            src.seek(0)
            dst.seek(0)
            dst.truncate()
            shutil.copyfileobj(src, dst, 1 << 20)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
