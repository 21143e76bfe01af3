"""Which open documents hold unsaved changes, so a read serves what the user sees.

pygls's workspace applies the incremental changes and keeps each buffer's text;
this adds the one fact LSP does not send: whether the buffer differs from the
file.  A buffer is dirty when it was opened with text that is not the file's,
or changed since it was opened or last saved.  A clean buffer is never served:
the disk may have changed since (a command, a git checkout), and then the disk is
the truth.

``snapshot`` gives what an edit through the editor is built on: the URI the
editor named the document with, the version it last reported and its text.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pygls.uris import to_fs_path
from pygls.workspace import Workspace

log = logging.getLogger("toolhost.documents")


def uri_to_path(uri: str) -> str | None:
    """The file system path of a ``file:`` URI (percent-decoded), else None."""
    path = to_fs_path(unquote(uri))
    return os.path.realpath(path) if path else None


@dataclass(frozen=True)
class OpenDocument:
    uri: str  # as the editor sent it
    version: int
    text: str
    dirty: bool  # the buffer holds changes the file on disk does not


class Documents:
    def __init__(self) -> None:
        self._dirty: dict[str, bool] = {}  # workspace key (unquoted uri) -> dirty
        self._by_path: dict[str, str] = {}  # real path -> workspace key

    def opened(self, uri: str, text: str) -> None:
        key = unquote(uri)
        path = uri_to_path(uri)
        self._dirty[key] = path is None or _differs_from_disk(path, text)
        if path is not None:
            self._by_path[path] = key

    def changed(self, uri: str) -> None:
        key = unquote(uri)
        if key in self._dirty:
            self._dirty[key] = True

    def saved(self, uri: str) -> None:
        key = unquote(uri)
        if key in self._dirty:
            self._dirty[key] = False

    def closed(self, uri: str) -> None:
        key = unquote(uri)
        self._dirty.pop(key, None)
        path = uri_to_path(uri)
        if path is not None and self._by_path.get(path) == key:
            del self._by_path[path]

    def _still_dirty(self, key: str, path: str, text: str) -> bool:
        """A buffer changed since its last save may hold the file's text again (typed,
        then undone): then it is clean, whatever the editor's flag says, until it changes."""
        if self._dirty.get(key, True) and not _differs_from_disk(path, text):
            self._dirty[key] = False
        return self._dirty.get(key, True)

    def unsaved_text(self, path: Path | str, workspace: Workspace) -> str | None:
        if not self._by_path:  # nothing open: skip resolving the path
            return None
        real = os.path.realpath(path)
        key = self._by_path.get(real)
        if key is None or not self._dirty.get(key):
            return None
        document = workspace.text_documents.get(key)
        source: str | None = document.source if document is not None else None
        if source is None or not self._still_dirty(key, real, source):
            return None
        return source

    def snapshot(self, path: Path, workspace: Workspace) -> OpenDocument | None:
        """The open document for ``path`` as the editor last reported it, else None."""
        if not self._by_path:
            return None
        key = self._by_path.get(os.path.realpath(path))
        document = workspace.text_documents.get(key) if key is not None else None
        if key is None or document is None:
            return None
        version = document.version if isinstance(document.version, int) else 0
        dirty = self._still_dirty(key, os.path.realpath(path), document.source)
        return OpenDocument(document.uri, version, document.source, dirty)

    def open_paths(self) -> list[Path]:
        """Every file the editor has open, in the order it opened them."""
        return [Path(path) for path in self._by_path]


def _differs_from_disk(path: str, text: str) -> bool:
    from tools.fsio import decode  # the tool framework loads after initialize; see app.py

    try:
        with open(path, "rb") as file:
            return decode(file.read()).text != text
    except OSError:
        return True  # no such file (a new, unsaved buffer) or unreadable
