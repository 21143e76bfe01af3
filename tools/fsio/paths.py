"""Path resolution, worktree-relative titles, and where each checked path really is (``Pins``).

Paths cannot sidestep the guard: ``~`` and ``..`` are resolved, and then every
symlink, so a link inside the project that points out of it is outside. A path
that does not exist yet (a file to write, a directory to create) is judged by
its nearest existing ancestor with symlinks resolved, plus the rest: a new file
under a linked directory is where the link points, and a dangling link is where
its target would be.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def resolve(path: str, base: Path) -> Path:
    """Absolute, normalised path (``..`` folded); symlinks are not resolved here."""
    return Path(resolve_text(path, base))


def resolve_text(path: str, base: Path | str) -> str:
    """``resolve`` as text, for hot paths where a Path's parse would cost more than the rest."""
    expanded = os.path.expanduser(path)
    joined = expanded if os.path.isabs(expanded) else os.path.join(base, expanded)
    return os.path.normpath(joined)


# Characters no path shown to a person may carry as they are: C0 and C1 controls, DEL,
# and Unicode's line and paragraph separators (each can start a new line on screen, so a
# name could forge a diff header or a title).
_CONTROLS = frozenset(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029))
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def control_character(text: str) -> int | None:
    """The index of the first control character in ``text``, else None."""
    if text.isprintable():  # the fast path: no control character at all
        return None
    return next((i for i, char in enumerate(text) if char in _CONTROLS), None)


def visible(text: str) -> str:
    """``text`` with each control character written as an escape (``\\n``, ``\\x1b``)."""
    if control_character(text) is None:
        return text
    return "".join(_escape(char) if char in _CONTROLS else char for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return _ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def real(path: Path) -> Path:
    """The path with every symlink resolved, even when the tail does not exist yet.

    ``os.path.realpath`` (non-strict) resolves component by component: every
    existing one is followed (a dangling link to where it points), and the part
    that does not exist is appended as it is, i.e. the nearest existing ancestor
    resolved plus the tail. On a symlink loop it stops resolving; such a path
    cannot be opened anyway.
    """
    return Path(os.path.realpath(path))


def locations(word: str, base: Path) -> list[Path]:
    """Where a shell may take the path argument ``word`` to be, symlinks resolved.

    The kernel reads ``link/..`` physically (the parent of the link's target), while
    ``cd`` and the file tools fold ``..`` first: both readings are returned (once
    when they agree), so a check covers whichever the program uses.
    """
    expanded = os.path.expanduser(word)
    joined = expanded if os.path.isabs(expanded) else os.path.join(base, expanded)
    forms = [real(Path(os.path.normpath(joined))), Path(os.path.realpath(joined))]
    return list(dict.fromkeys(forms))


def is_inside(path: Path, root: Path) -> bool:
    # String prefix test: Path.parents builds every ancestor, and this runs per call.
    return _inside_text(str(path), str(root))


def _inside_text(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def relative(path: Path | str, worktree: Path) -> str:
    """Worktree-relative with forward slashes; absolute when outside the worktree."""
    inner, root = os.fspath(path), str(worktree).rstrip("/")
    if inner == root:
        return "."
    if inner.startswith(root + "/"):
        return inner[len(root) + 1 :]
    return inner  # POSIX paths already use forward slashes


class Pins:
    """Where each path a call checked really was, so its file I/O goes exactly there.

    ``assert_external_directory`` resolves a path once and pins the result; the
    file I/O of the call (``tools.fsio`` through ``ctx.real``) then walks the
    pinned path with directory fds, so a symlink swapped in after the check is
    refused instead of followed (``tools.fsio.dirfd``).
    """

    def __init__(self) -> None:
        # Keyed and valued by text: this runs several times per call, and a Path costs
        # a parse and a hash each time.
        self._real: dict[str, str] = {}

    def pin(self, path: Path | str, real: Path | str) -> None:
        self._real[os.path.normpath(path)] = os.fspath(real)

    def real(self, path: Path | str) -> Path:
        """``path`` as checked (symlinks resolved then); an unchecked path is resolved now.

        A name under a checked folder (a folder another path was pinned to) is resolved
        relative to the folder's pin, so a file tool's parents are pinned too.
        """
        return Path(self.real_text(path))

    def real_text(self, path: Path | str) -> str:
        """``real`` as text."""
        key = os.path.normpath(path)
        found = self._real.get(key)
        if found is not None:
            return found
        folder, name = os.path.split(key)
        parent = self._real.get(folder)
        if parent is not None:
            return real_under_text(parent, name)
        return os.fspath(resolve_once(Path(key)))


def resolve_once(path: Path) -> Path:
    """``path`` with every symlink resolved, consistently: the folder is resolved once
    and the name under it followed only if it is itself a link."""
    path = Path(os.path.normpath(path))
    if path.name == "":
        return path
    return real_under(Path(os.path.realpath(path.parent)), path.name)


def real_under(folder: Path, name: str) -> Path:
    return Path(real_under_text(os.fspath(folder), name))


def real_under_text(folder: str, name: str) -> str:
    """``folder`` (already real) joined with ``name``, followed only if it is a link."""
    candidate = os.path.join(folder, name)
    if name in ("", ".", "..") or not os.path.islink(candidate):
        return os.path.normpath(candidate)
    return os.path.realpath(candidate)


@dataclass(frozen=True)
class Roots:
    """A project's folders as text, for the guard that runs on every file a call touches:
    the directory and worktree as written and as resolved, each also with one trailing
    slash (what a path under it starts with), so a test is one C-level call."""

    real: tuple[str, ...]
    real_prefixes: tuple[str, ...]
    written: tuple[str, ...]
    written_prefixes: tuple[str, ...]

    @classmethod
    def of(cls, directory: Path, worktree: Path) -> Roots:
        real = (os.path.realpath(directory), os.path.realpath(worktree))
        written = (str(directory), str(worktree), *real)
        return cls(real, _prefixes(real), written, _prefixes(written))


def _prefixes(roots: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(root.rstrip("/") + "/" for root in roots)
