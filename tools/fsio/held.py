"""A file's inode held open, so its bytes can be read or linked later without a copy now.

``atomic_write`` replaces a file by renaming a new one over its name and never writes
into the old inode, so a change that holds the old inode open can still read what the
file held (to put it back) and give it a second name (a journal's backup) after the
rename, without reading or copying 3.5 MB of a big file up front.
"""

from __future__ import annotations

import errno
import os
import stat
import weakref
from pathlib import Path

from tools.fsio import dirfd


class Held:
    """An open regular file; ``close`` when done (a finaliser closes it otherwise)."""

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.info = info  # as it was opened
        self._closer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, path: Path) -> Held:
        """The regular file at ``path`` itself, reached through directory fds (a link or a
        FIFO swapped in is refused, never followed or waited on)."""
        fd = dirfd.open_file(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(path))
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, info)

    def same_file(self, info: os.stat_result) -> bool:
        """Whether ``info`` (an lstat) is this inode."""
        return (info.st_dev, info.st_ino) == (self.info.st_dev, self.info.st_ino)

    def read(self) -> bytes:
        """Its whole content, from the start."""
        chunks: list[bytes] = []
        offset = 0
        while chunk := os.pread(self.fd, max(self.info.st_size - offset, 1 << 16), offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def link(self, target: Path) -> None:
        """Give the inode the new name ``target`` (raises ``OSError`` where the kernel will
        not: another file system, no ``/proc``, the file deleted meanwhile)."""
        # linkat(2) with AT_SYMLINK_FOLLOW on /proc/self/fd links the open inode itself:
        # no name is looked up again, so nothing swapped in since can be linked instead.
        # (os.link calls linkat only when given a dir fd; link(2) would not follow.)
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            source = f"/proc/self/fd/{self.fd}"
            os.link(source, target.name, dst_dir_fd=folder, follow_symlinks=True)
        finally:
            os.close(folder)

    def close(self) -> None:
        self._closer()
