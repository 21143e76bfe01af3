"""New names in the guarded folders are made by the supervisor, and never ``.git``: no
command makes a git repository in the project that git outside the sandbox then obeys.

The threat: a command runs ``git init sub && git -C sub config core.fsmonitor …`` (or
writes a ``.git`` file pointing at a git dir in its ``$TMPDIR``), and VS Code's git,
which opens a new repository within a second, runs that command unsandboxed while the
command still runs. Existing repositories are read-only to commands (``settings``); a
new one must not appear at all.

How it holds:

- **The kernel.** A second Landlock layer (``landlock.creations_layer``) takes from the
  command every right to make a name (a folder, a file, a symlink, a FIFO, a device) in
  the guarded folders (the project, ``allowed_dirs`` and the other folders made writable
  by config or a person), while the git dirs in them, the command's temp dir,
  ``/dev/shm`` and the package caches stay free. ``mkdir``, ``open`` with ``O_CREAT`` of
  a new file, ``rename``, ``link``, ``symlink`` and ``mknod`` there fail with EACCES when
  the command itself tries them.
- **The supervisor.** The filter (``notify``) stops each of those calls. The supervisor
  reads the path from the command's memory once, works out where it lands (from the
  command's own root, working directory or directory fd, in its mount namespace, whose
  read-only mounts apply), and if that is a guarded folder and the name is allowed, makes
  the name itself from its own copy, and the call returns what that returned (an opened
  file's descriptor is put in the command with ``SECCOMP_IOCTL_NOTIF_ADDFD``). A thread
  that rewrites the path after the supervisor read it changes nothing: the call that
  runs is the supervisor's. Any other call goes on as the command made it (CONTINUE),
  which is safe whatever its arguments say by then: the kernel still refuses the command
  a new name in a guarded folder (seccomp_unotify(2): letting a call go on must never
  rest on what its arguments said).

Refused with EPERM, and reported (``refused``): a name git takes for a repository,
``.git`` in any case and with any of the code points a case-folding file system ignores,
or a name that makes its folder a git dir git finds by itself (``HEAD`` beside
``objects`` or ``commondir``, either made second),
except in and below a folder a person allowed (``allowed``: ``sandbox.repositories``);
a missing protected path (``unmade``: ``.vscode``, ``.nvim.lua``, ``.claude``… that
``masks`` would otherwise hold with a placeholder the user's file explorer sees come
and go), in any case, never allowed;
a symlink that leads through a folder the command may change outside the guarded ones
(git would find a repository made there). A folder moved in from outside the guarded
folders (the temp dir, a git dir) gets EXDEV, so ``mv`` copies it and each name it
makes is checked; other entries can be moved in. A character or block device and
``RENAME_WHITEOUT`` are never made by the supervisor (it may hold privileges the
command does not): those calls go on, and the kernel refuses them in a guarded folder.
A rename of a name that is a mount point in the command's namespace (a protected path
bound read-only onto itself) gets EBUSY, as there: in the supervisor's namespace it is
no mount, and the rename would go through.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tools.bash.sandbox.names import folded, is_repository_name
from tools.bash.sandbox.notify import Listener, Notification, read_bytes, read_path, signed, table
from tools.bash.sandbox.plan import guards, inside
from tools.bash.sandbox.syscalls import openat2, renameat2

AT_FDCWD = -100
AT_SYMLINK_FOLLOW = 0x400
AT_EMPTY_PATH = 0x1000
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
_FOLDER = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_RESOLVE = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS
_MAX_LINKS = 40
# Opens the supervisor leaves to the kernel: an O_PATH one creates nothing, O_TMPFILE no
# name (linkat names it later), O_DIRECTORY with O_CREAT fails.
_NOT_MADE = os.O_PATH | os.O_DIRECTORY | getattr(os, "O_TMPFILE", 0)
# A descriptor of the process itself, by the path a program links an O_TMPFILE with.
_OWN_FD = re.compile(rb"^/(?:proc/(?:self|thread-self)|dev)/fd/(\d+)$")

_T = TypeVar("_T")


class _Gone:
    """What ``_make`` returns when the stopped process died before anything was made."""


GONE = _Gone()
_TABLE = table()
_NAMES: dict[int, str] = _TABLE.names() if _TABLE is not None else {}


@dataclass
class _Spot:
    """Where a path lands: its folder (an O_PATH descriptor, closed by ``close``), that
    folder's path (the supervisor's view, which a sandbox shares: writable folders are
    bound onto themselves), and the last name."""

    folder: int
    path: str
    name: bytes

    def close(self) -> None:
        os.close(self.folder)


class Creations:
    """One command's guarded folders, and the names refused it so far."""

    def __init__(
        self,
        listener: Listener,
        *,
        guarded: list[str],
        free: list[str],
        writable: list[str],
        allowed: list[str],
        unmade: Sequence[str] = (),
    ) -> None:
        self.listener = listener
        self.guarded = [os.path.realpath(p) for p in guarded]
        self.free = [os.path.realpath(p) for p in free]
        self.writable = [os.path.realpath(p) for p in writable]
        self.allowed = {os.path.realpath(p) for p in allowed}
        # Missing protected paths (``masks``) never made here: (folder, folded name).
        self.unmade = {_folded_path(p) for p in unmade}
        # What was refused, in order: {"kind": "repository", "path": the folder it was
        # to be made in} or {"kind": "symlink", "path": the link}.
        self.refused: list[dict[str, str]] = []

    def settle(self, n: Notification) -> bool:
        """Make the stopped call's new name and answer it; False: let it go on."""
        handler = _HANDLERS.get(_NAMES.get(n.nr, ""))
        if handler is None:
            return False
        opened: list[_Spot] = []
        try:
            return handler(self, n, opened)
        except OSError:
            return False  # the kernel refuses what the supervisor could not make
        finally:
            for spot in opened:
                spot.close()

    # ---------------------------------------------------------------- the calls

    def _open(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        name = _NAMES[n.nr]
        if name == "openat2":
            how = read_bytes(n.pid, a[2], 24) if a[3] >= 24 else None
            if how is None or len(how) < 24:
                return False
            flags, mode, resolve = struct.unpack("=QQQ", how)
            if resolve:
                return False  # its own resolution rules: left to the kernel
            dirfd, address = signed(a[0]), a[1]
        elif name == "creat":
            dirfd, address, flags, mode = (
                AT_FDCWD,
                a[0],
                os.O_CREAT | os.O_WRONLY | os.O_TRUNC,
                a[1],
            )
        elif name == "open":
            dirfd, address, flags, mode = AT_FDCWD, a[0], a[1], a[2]
        else:
            dirfd, address, flags, mode = signed(a[0]), a[1], a[2], a[3]
        flags &= 0xFFFFFFFF
        if not flags & os.O_CREAT or flags & _NOT_MADE:
            return False
        spot = self._spot(n, dirfd, read_path(n.pid, address), opened)
        follow = not flags & (os.O_EXCL | os.O_NOFOLLOW)
        for _ in range(_MAX_LINKS):
            if spot is None or not self._guarded(spot.path):
                return False
            info = _lstat(spot)
            if info is None:
                break
            if not (follow and stat.S_ISLNK(info.st_mode)):
                return False  # it exists: the kernel opens it, or refuses
            link = os.readlink(spot.name, dir_fd=spot.folder)
            spot = self._spot(n, AT_FDCWD, self._beside(n, spot, link), opened)
        else:
            return False
        if self._refuse(n, spot):
            return True
        made = self._make(
            n,
            lambda: os.open(
                spot.name,
                (flags | os.O_EXCL | os.O_CLOEXEC) & ~os.O_NOCTTY,
                mode & 0o7777,
                dir_fd=spot.folder,
            ),
        )
        if isinstance(made, OSError):
            if made.errno == errno.EEXIST and not flags & os.O_EXCL:
                return False  # made meanwhile (outside): the kernel opens it
            self.listener.answer(n.id, error=made.errno or errno.EIO)
            return True
        if isinstance(made, _Gone):
            return True
        try:
            self.listener.add_fd(n.id, made, cloexec=bool(flags & os.O_CLOEXEC))
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(spot.name, dir_fd=spot.folder)  # no call got it: not made
            if error.errno != errno.ENOENT:
                self.listener.answer(n.id, error=error.errno or errno.EIO)
        finally:
            os.close(made)
        return True

    def _mkdir(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        at = _NAMES[n.nr] == "mkdirat"
        dirfd, address, mode = (signed(a[0]), a[1], a[2]) if at else (AT_FDCWD, a[0], a[1])
        spot = self._spot(n, dirfd, read_path(n.pid, address), opened, trailing=True)
        if spot is None or not self._guarded(spot.path):
            return False
        if self._refuse(n, spot):
            return True
        return self._answer(n, lambda: os.mkdir(spot.name, mode & 0o7777, dir_fd=spot.folder))

    def _mknod(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        at = _NAMES[n.nr] == "mknodat"
        dirfd, address, mode, device = (
            (signed(a[0]), a[1], a[2], a[3]) if at else (AT_FDCWD, a[0], a[1], a[2])
        )
        kind = stat.S_IFMT(mode & 0xFFFFFFFF)
        if kind not in (0, stat.S_IFREG, stat.S_IFIFO, stat.S_IFSOCK):
            return False  # a device: never made by the supervisor
        spot = self._spot(n, dirfd, read_path(n.pid, address), opened)
        if spot is None or not self._guarded(spot.path):
            return False
        if self._refuse(n, spot):
            return True
        return self._answer(
            n, lambda: os.mknod(spot.name, mode & 0xFFFFFFFF, device, dir_fd=spot.folder)
        )

    def _symlink(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        at = _NAMES[n.nr] == "symlinkat"
        target = read_path(n.pid, a[0])
        dirfd, address = (signed(a[1]), a[2]) if at else (AT_FDCWD, a[1])
        spot = self._spot(n, dirfd, read_path(n.pid, address), opened)
        if target is None or spot is None or not self._guarded(spot.path):
            return False
        if self._refuse(n, spot) or self._refuse_link(n, spot, target):
            return True
        return self._answer(n, lambda: os.symlink(target, spot.name, dir_fd=spot.folder))

    def _link(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        at = _NAMES[n.nr] == "linkat"
        if at:
            olddirfd, old_address, newdirfd, new_address, flags = (
                signed(a[0]),
                a[1],
                signed(a[2]),
                a[3],
                a[4] & 0xFFFFFFFF,
            )
        else:
            olddirfd, old_address, newdirfd, new_address, flags = AT_FDCWD, a[0], AT_FDCWD, a[1], 0
        spot = self._spot(n, newdirfd, read_path(n.pid, new_address), opened)
        if spot is None or not self._guarded(spot.path):
            return False
        old = read_path(n.pid, old_address)
        if old is None:
            return False
        own = _OWN_FD.match(old)
        if (flags & AT_EMPTY_PATH and old == b"") or (own and flags & AT_SYMLINK_FOLLOW):
            number = olddirfd if not own else int(own.group(1))
            # The process's own file, held here before it is checked: /proc/<pid> is
            # its only while the call is stopped (``_make`` checks that last).
            held = os.open(f"/proc/{n.pid}/fd/{number}", os.O_PATH | os.O_CLOEXEC)
            opened.append(_Spot(held, "", b""))
            source = f"/proc/self/fd/{held}"
            where, source_dir, follow = os.readlink(source), None, True
        else:
            source_spot = self._spot(n, olddirfd, old, opened)
            if source_spot is None:
                return False
            if flags & AT_SYMLINK_FOLLOW:
                return False  # the final link would be followed from the supervisor's root
            source, source_dir, follow = os.fsdecode(source_spot.name), source_spot.folder, False
            where = source_spot.path
        if not any(inside(where, w) for w in self.writable):
            return False  # the kernel refuses a link from a folder it may not change
        if self._refuse(n, spot):
            return True
        return self._answer(
            n,
            lambda: os.link(
                source,
                spot.name,
                src_dir_fd=source_dir,
                dst_dir_fd=spot.folder,
                follow_symlinks=follow,
            ),
        )

    def _rename(self, n: Notification, opened: list[_Spot]) -> bool:
        a = n.args
        name = _NAMES[n.nr]
        if name == "rename":
            ends, flags = ((AT_FDCWD, a[0]), (AT_FDCWD, a[1])), 0
        else:
            ends = ((signed(a[0]), a[1]), (signed(a[2]), a[3]))
            flags = a[4] & 0xFFFFFFFF if name == "renameat2" else 0
        if flags & RENAME_WHITEOUT:
            return False
        old, new = (self._spot(n, d, read_path(n.pid, p), opened) for d, p in ends)
        if old is None or new is None:
            return False
        if not (self._guarded(old.path) or self._guarded(new.path)):
            return False  # between free folders: the kernel decides
        if not all(any(inside(s.path, w) for w in self.writable) for s in (old, new)):
            return False  # the kernel refuses a move from or to a folder it may not change
        if _mount_point(old) or _mount_point(new):
            # A mount in the command's namespace (a protected path, bound read-only) is
            # none in the supervisor's, where the rename would go through.
            return self._answer(n, error=errno.EBUSY)
        moves = [(old, new)] + ([(new, old)] if flags & RENAME_EXCHANGE else [])
        for source, to in moves:
            if not self._guarded(to.path):
                continue
            info = _lstat(source)
            if info is None:
                return False
            if stat.S_ISDIR(info.st_mode) and not self._guarded(source.path):
                return self._answer(n, error=errno.EXDEV)  # copied instead, name by name
            if self._refuse(n, to, replacing=True):
                return True
            if stat.S_ISLNK(info.st_mode):
                link = os.readlink(source.name, dir_fd=source.folder)
                if self._refuse_link(n, to, link):
                    return True
        return self._answer(n, lambda: renameat2(old.folder, old.name, new.folder, new.name, flags))

    # ---------------------------------------------------------------- deciding

    def _guarded(self, path: str) -> bool:
        return guards(path, self.guarded, self.free)

    def _refuse(self, n: Notification, spot: _Spot, *, replacing: bool = False) -> bool:
        """Answer EPERM (or EEXIST) when ``spot`` names a repository where none may be
        made, or a protected path that is missing; False when the name is allowed."""
        if (spot.path, folded(spot.name)) in self.unmade:
            kind, where = "protected", os.path.join(spot.path, os.fsdecode(spot.name))
        elif is_repository_name(spot.name) or _completes_git_dir(spot):
            if any(inside(spot.path, a) for a in self.allowed):
                return False
            kind, where = "repository", spot.path
        else:
            return False
        if not replacing and _lstat(spot) is not None:
            self._answer(n, error=errno.EEXIST)  # as the kernel would: nothing is made
            return True
        self._note(kind, where)
        self._answer(n, error=errno.EPERM)
        return True

    def _refuse_link(self, n: Notification, spot: _Spot, target: bytes) -> bool:
        """Refuse a symlink in a guarded folder that leads through a folder the command
        may change outside the guarded ones: git would follow it to a repository made
        there (a temp dir, a package cache), out of this check's sight."""
        if not any(
            inside(p, w) and not self._guarded(p)
            for p in _walk(spot.path, target)
            for w in self.writable
        ):
            return False
        self._note("symlink", os.path.join(spot.path, os.fsdecode(spot.name)))
        self._answer(n, error=errno.EPERM)
        return True

    def _note(self, kind: str, path: str) -> None:
        entry = {"kind": kind, "path": path}
        if entry not in self.refused:
            self.refused.append(entry)

    # ---------------------------------------------------------------- acting

    def _spot(
        self,
        n: Notification,
        dirfd: int,
        raw: bytes | None,
        opened: list[_Spot],
        *,
        trailing: bool = False,
    ) -> _Spot | None:
        """Where the process's ``raw`` path (from ``dirfd``) lands: resolved by the
        kernel from the process's own root, symlinks and ``..`` as it would, magic links
        (``/proc/self/…``, which would be the supervisor's) refused."""
        if not raw:
            return None
        if trailing:
            raw = raw.rstrip(b"/") or b"/"
        elif raw.endswith(b"/"):
            return None
        head, _, name = raw.rpartition(b"/")
        if name in (b"", b".", b".."):
            return None
        root = os.readlink(f"/proc/{n.pid}/root".encode())
        if raw.startswith(b"/"):
            start = head
        else:
            link = "cwd" if dirfd == AT_FDCWD else f"fd/{dirfd}"
            if dirfd != AT_FDCWD and dirfd < 0:
                return None
            base = os.readlink(f"/proc/{n.pid}/{link}".encode())
            if not base.startswith(b"/") or base.endswith(b" (deleted)"):
                return None
            if root != b"/":
                if not (base == root or base.startswith(root + b"/")):
                    return None
                base = base[len(root) :]
            start = base + (b"/" + head if head else b"")
        root_fd = os.open(f"/proc/{n.pid}/root", _FOLDER)
        try:
            folder = openat2(root_fd, start.lstrip(b"/") or b".", _FOLDER, _RESOLVE)
        finally:
            os.close(root_fd)
        spot = _Spot(folder, "", name)
        opened.append(spot)
        spot.path = os.readlink(f"/proc/self/fd/{folder}")
        if not spot.path.startswith("/") or spot.path.endswith(" (deleted)"):
            return None
        return spot

    def _beside(self, n: Notification, spot: _Spot, link: bytes) -> bytes:
        """A symlink's target as an absolute path in the process's view."""
        if link.startswith(b"/"):
            return link
        root = os.readlink(f"/proc/{n.pid}/root")
        inner = spot.path[len(root) :] if root != "/" else spot.path
        return os.fsencode(inner or "/") + b"/" + link

    def _answer(
        self, n: Notification, action: Callable[[], object] | None = None, error: int = 0
    ) -> bool:
        """Answer the call: with what ``action`` (made here) returned, or ``error``."""
        if action is not None:
            made = self._make(n, action)
            if made is GONE:
                return True
            if isinstance(made, OSError):
                error = made.errno or errno.EIO
        self.listener.answer(n.id, error=error)
        return True

    def _make(self, n: Notification, action: Callable[[], _T]) -> _T | OSError | _Gone:
        """``action``'s result (or the OSError it raised), run under the process's
        umask; ``GONE`` when the process is gone (nothing is made, nothing answered).

        Checked last, after everything read through ``/proc/<pid>``: the call is still
        stopped, so its process is alive and that pid (and what was read) is its own."""
        mask = _umask(n.pid)
        if not self.listener.valid(n.id):
            return GONE
        previous = os.umask(mask)
        try:
            return action()
        except OSError as error:
            return error
        finally:
            os.umask(previous)


_HANDLERS: dict[str, Callable[[Creations, Notification, list[_Spot]], bool]] = {
    **dict.fromkeys(("open", "creat", "openat", "openat2"), Creations._open),
    **dict.fromkeys(("mkdir", "mkdirat"), Creations._mkdir),
    **dict.fromkeys(("mknod", "mknodat"), Creations._mknod),
    **dict.fromkeys(("symlink", "symlinkat"), Creations._symlink),
    **dict.fromkeys(("link", "linkat"), Creations._link),
    **dict.fromkeys(("rename", "renameat", "renameat2"), Creations._rename),
}


# What makes a folder a git dir that git finds by itself (setup.c, is_git_directory):
# a HEAD beside objects (and refs), or beside a commondir file naming where they are.
_GIT_DIR_PAIRS = {b"head": (b"objects", b"commondir"), b"objects": (b"HEAD",)}
_GIT_DIR_PAIRS[b"commondir"] = _GIT_DIR_PAIRS[b"objects"]


def _folded_path(path: str) -> tuple[str, str | None]:
    folder, name = os.path.split(path)
    return folder, folded(os.fsencode(name))


def _completes_git_dir(spot: _Spot) -> bool:
    """Whether making this name would give its folder the parts of a git dir (a bare
    repository with ``core.bare`` false and ``core.worktree`` set has a work tree, and
    its config is obeyed like a ``.git``'s). Race-free: every name in a guarded folder
    is made here, one call at a time."""
    others = _GIT_DIR_PAIRS.get(spot.name.lower(), ())
    return any(_lstat(_Spot(spot.folder, spot.path, other)) is not None for other in others)


def _lstat(spot: _Spot) -> os.stat_result | None:
    try:
        return os.stat(spot.name, dir_fd=spot.folder, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _mount_point(spot: _Spot) -> bool:
    """Whether the name is a mount point in the command's namespace (the folder's
    descriptor is in it: what the name leads to is on another mount)."""
    try:
        held = os.open(spot.name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=spot.folder)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        return _mount_id(held) != _mount_id(spot.folder)
    finally:
        os.close(held)


def _mount_id(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}", "rb") as info:
        for line in info:
            if line.startswith(b"mnt_id:"):
                return int(line.split()[1])
    raise OSError(errno.EIO, "no mnt_id in fdinfo")


def _umask(pid: int) -> int:
    with open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _walk(folder: str, target: bytes) -> Iterator[str]:
    """Every folder a symlink in ``folder`` to ``target`` passes through, in the
    supervisor's view: followed where the path exists, taken as written past that."""
    pending = os.fsdecode(target).split("/")
    where = "/" if pending[0] == "" else folder
    hops = 0
    yield where
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            where = os.path.dirname(where)
            yield where
            continue
        step = os.path.join(where, part)
        try:
            link = os.readlink(step)
        except OSError:
            where = step
            yield where
            continue
        hops += 1
        if hops > _MAX_LINKS:
            return  # a loop leads nowhere
        pending = link.split("/") + pending
        if link.startswith("/"):
            where = "/"
        yield where
