"""Reading and writing text files so that an edit changes only what it means to.

Encoding, byte-order mark, line endings and file mode survive a round trip, and
every write is atomic: a temp file in the same directory, fsync, rename, all through
directory fds (``tools.fsio.dirfd``), so what was checked is what is touched.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tools.fsio import dirfd

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class TextFile:
    """A decoded file: ``text`` has no BOM and keeps its own line endings."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    mode: int | None = None  # permission bits of the existing file

    @property
    def crlf(self) -> bool:
        return "\r\n" in self.text

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.encoding)


def decode(data: bytes) -> TextFile:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return TextFile(data[len(bom) :].decode(encoding, errors="replace"), encoding, bom)
    try:
        return TextFile(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        # latin-1 maps every byte to one character, so unknown 8-bit text round-trips.
        return TextFile(data.decode("latin-1"), "latin-1")


def read_text(path: Path, real: Path | None = None) -> TextFile:
    """The file at ``path``; ``real``: where ``path`` was checked to be (symlinks resolved),
    which is what is read, through directory fds (``dirfd``), never by name again."""
    data, info = dirfd.read_file(real or resolved(path))
    decoded = decode(data)
    return TextFile(decoded.text, decoded.encoding, decoded.bom, stat.S_IMODE(info.st_mode))


def resolved(path: Path) -> Path:
    """``path`` with every symlink resolved now (for callers that checked nothing)."""
    return Path(os.path.realpath(path))


def to_line_endings(text: str, crlf: bool) -> str:
    normalised = text.replace("\r\n", "\n")
    return normalised.replace("\n", "\r\n") if crlf else normalised


def atomic_write(
    path: Path,
    data: bytes,
    mode: int | None = None,
    *,
    real: Path | None = None,
    tag: str | None = None,
) -> None:
    """Replace ``path`` with ``data`` in one rename; parents are created.

    A symlink is written through (its target changes, the link stays), like an
    editor's save: ``real`` is where ``path`` was checked to be (symlinks resolved;
    resolved now when not given), and the write goes there through directory fds,
    so a link that appears on the way afterwards is refused (``dirfd.PathChanged``),
    never followed.  An existing file keeps its mode; a new one gets the usual
    umask-derived mode.  ``tag`` names the temp file (``dirfd.temp_name``).
    """
    target = real or resolved(path)
    if mode is None:
        info = dirfd.lstat(target)
        if info is not None and stat.S_ISREG(info.st_mode):
            mode = stat.S_IMODE(info.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    dirfd.replace(target, data, mode, tag=tag)


def writable(info: os.stat_result) -> bool:
    """Whether the file's own mode lets this user write it.

    Replacing a file goes through its folder (a rename), which its mode does not
    guard, so this is checked first.  As root, whom mode bits do not stop, a file
    with no write bit at all (``0444``) still counts as read-only: its owner said so.
    """
    if os.geteuid() == 0:
        return bool(info.st_mode & 0o222)
    if info.st_uid == os.geteuid():
        return bool(info.st_mode & stat.S_IWUSR)
    if info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        return bool(info.st_mode & stat.S_IWGRP)
    return bool(info.st_mode & stat.S_IWOTH)
