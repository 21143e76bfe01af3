"""A user + mount (+ network) namespace per command, set up between fork and exec.

Landlock grants whole hierarchies: inside a writable project it cannot keep
``.git/hooks`` read-only. A mount namespace can: each protected path is bound onto
itself and remounted read-only, so writing it fails with EROFS; and because it is
a mount point, it cannot be renamed or removed either (EBUSY), nor can its
parents that are pinned the same way (the project root, ``.git``), so
``mv .git x && mkdir .git`` does not get around it. Only paths that exist when the
command starts can be protected this way. Landlock, applied after these mounts,
forbids any further mount or unmount, so the command cannot undo them even as
root inside its namespace.

A new network namespace has only a loopback interface, down: no packet leaves.

All of it needs unprivileged user namespaces (``unshare(CLONE_NEWUSER)``), which
some systems turn off; ``probe`` finds out once. The user and group map the
caller's own ids, so files keep their owner and ``id`` prints what it did outside.
"""

from __future__ import annotations

import errno
import os
import stat

from tools.bash.sandbox.syscalls import (
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MS_BIND,
    MS_NOATIME,
    MS_NODEV,
    MS_NODIRATIME,
    MS_NOEXEC,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_RELATIME,
    MS_REMOUNT,
    MS_SLAVE,
    mount,
    unshare,
)

# statvfs f_flag bits -> the mount flags a remount must keep (the kernel locks
# them on mounts a user namespace inherits, and refuses a remount that drops one).
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)


def enter(uid: int, gid: int, *, network: bool) -> None:
    """Move the calling (single-threaded) process into new namespaces.

    ``network``: a new network namespace too (no interfaces up).
    """
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if network else 0)
    unshare(flags)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    # Nothing mounted here may propagate back to the host.
    mount(None, "/", None, MS_REC | MS_SLAVE, None)


def pin(path: str) -> None:
    """Make ``path`` a mount point (bound onto itself): it can no longer be renamed."""
    mount(path, path, None, MS_BIND | MS_REC, None)


def read_only(path: str) -> None:
    """Bind ``path`` onto itself, read-only."""
    pin(path)
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(path), None)


def hide(path: str) -> None:
    """Put an empty read-only directory (or /dev/null, for a file) over ``path``.

    A path removed since the plan listed it (a relay's folder whose ``toolhost acp``
    ended, an editor's socket) is left alone: nothing is there to hide."""
    try:
        if stat.S_ISDIR(os.stat(path).st_mode):
            flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
            mount("tmpfs", path, "tmpfs", flags, "mode=0555,size=4k")
        else:
            mount("/dev/null", path, None, MS_BIND, None)
    except OSError as error:
        if error.errno != errno.ENOENT:
            raise


def _kept_flags(path: str) -> int:
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _KEPT_FLAGS if flags & st)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
