"""Reading and writing text files so that an edit changes only what it means to.

Encoding, byte-order mark, line endings and file mode survive a round trip, and
every write is atomic: a temp file in the same directory, fsync, rename.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


def read_text(path: Path) -> TextFile:
    data = path.read_bytes()
    decoded = decode(data)
    mode = stat.S_IMODE(path.stat().st_mode)
    return TextFile(decoded.text, decoded.encoding, decoded.bom, mode)


def to_line_endings(text: str, crlf: bool) -> str:
    normalised = text.replace("\r\n", "\n")
    return normalised.replace("\n", "\r\n") if crlf else normalised


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one rename; parents are created.

    A symlink is written through (its target changes, the link stays), like an
    editor's save.  New files get the usual umask-derived mode.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".toolhost")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
