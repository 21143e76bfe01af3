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

Everything else is read-only too (``writable_only``): every mount is made read-only
and only the writable folders are bound back writable.  Landlock's write rights do
not cover a file's mode, owner, times or extended attributes (``chmod``, ``touch``,
``setfattr`` outside the project would succeed); a read-only mount refuses them all.
``/dev/shm`` gets a tmpfs of the command's own, so nothing it puts there is shared.

A new network namespace has only a loopback interface, down: no packet leaves. For
the domain lists (``network: domains``), loopback is brought up and one listener is
bound on it before the command runs; the supervisor hands that socket to the sidecar,
whose proxy accepts on it from outside. The namespace has no other interface, no route
and no resolver, so that listener is the command's only way out.

All of it needs unprivileged user namespaces (``unshare(CLONE_NEWUSER)``), which
some systems turn off; ``probe`` finds out once. The user and group map the
caller's own ids, so files keep their owner and ``id`` prints what it did outside.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
import struct

from tools.bash.sandbox.syscalls import (
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MOUNT_ATTR_RDONLY,
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
    mount_setattr,
    unshare,
)

SHARED_MEMORY = "/dev/shm"

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


def writable_only(writable: list[str]) -> None:
    """Every mount read-only but ``writable`` (bound onto themselves first, so each is
    a mount whose flag can be lifted alone) and a private ``/dev/shm``.  Device files
    stay usable: a read-only mount refuses writes to regular files, folders and links
    only."""
    for path in writable:
        pin(path)
    mount_setattr("/", set_=MOUNT_ATTR_RDONLY, recursive=True)
    for path in writable:
        _writable_again(path)
    if os.path.isdir(SHARED_MEMORY):
        flags = MS_NOSUID | MS_NODEV
        mount("tmpfs", SHARED_MEMORY, "tmpfs", flags, "mode=1777")


def _writable_again(path: str) -> None:
    """Lift the read-only flag set above from the mounts at and below ``path``; one
    that was read-only already (the kernel keeps that flag locked) stays so."""
    try:
        mount_setattr(path, clear=MOUNT_ATTR_RDONLY, recursive=True)
    except OSError:
        with contextlib.suppress(OSError):
            mount_setattr(path, clear=MOUNT_ATTR_RDONLY, recursive=False)


_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = struct.Struct("16sH14x")  # struct ifreq: the name, then ifr_flags


def loopback_listener() -> socket.socket:
    """Bring this network namespace's loopback up and listen on 127.0.0.1 (a free port).

    The socket is close-on-exec: the command cannot accept on it itself.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        _, flags = _IFREQ.unpack(fcntl.ioctl(control, _SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0)))
        fcntl.ioctl(control, _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


def pin(path: str) -> None:
    """Make ``path`` a mount point (bound onto itself): it can no longer be renamed."""
    mount(path, path, None, MS_BIND | MS_REC, None)


def read_only(path: str) -> None:
    """Bind ``path`` onto itself, read-only."""
    pin(path)
    mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(path), None)


def hide(path: str) -> None:
    """Put an empty read-only directory (or /dev/null, for a file) over ``path``.

    A path gone since the plan listed it (another program's socket or relay folder in
    /tmp, removed meanwhile) has nothing left to hide, and the command still runs."""
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
