"""A small editor for wire tests: buffers, applyEdit, saves, diagnostics and LSP answers.

``FakeEditor`` is a pytest-lsp client that behaves like an editor would:

- it keeps its own copy of every document it opened (text and version) and sends
  ``didOpen`` / ``didChange`` / ``didSave`` as an editor does;
- ``workspace/applyEdit`` applies the edit to that copy when the version matches
  (else answers ``applied: false``), then reports the change (``announces = False``:
  it never does);
- ``editor/saveDocuments`` writes the copies to disk (``transform`` plays a
  format-on-save; ``saves = False`` an editor that never saves, ``save_fails`` one
  that answers with an error);
- ``editor/diagnostics`` runs a tiny "language server" over the current text
  (buffer, else disk): ``ERR(name)`` is an undefined name, ``WARN`` a warning, and
  ``USES file word`` an error while ``file`` does not contain ``word``
  (``diagnostics_answer``: answer that instead);
- ``editor/lsp`` answers from ``lsp_answers`` (method -> result) or ``lsp_errors``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.wire.conftest import WireClient, serve_to
from tools.changes.positions import PositionEncoding, apply_text_edits

UNDEFINED = re.compile(r"ERR\((\w+)\)")
USES = re.compile(r"USES (\S+) (\w+)")


class EditorError(JsonRpcException):
    """An error answer the test asked for (not a fault of the fake)."""


@dataclass
class Buffer:
    path: Path
    text: str
    version: int


class FakeEditor(WireClient):
    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.buffers: dict[str, Buffer] = {}  # uri -> buffer
        self.apply_reply: str | None = None  # None: apply; "refuse" / "error": do not
        self.position_encoding: PositionEncoding = "utf-16"  # as negotiated at initialize
        self.announces = True
        self.saves = True
        self.save_fails = False
        self.transform: Callable[[str], str] | None = None  # a format-on-save
        self.open_gate = asyncio.Event()  # cleared: editor/openDocument waits for it
        self.open_gate.set()
        self.lsp_answers: dict[str, Any] = {}
        self.lsp_errors: dict[str, tuple[int, str]] = {}
        self.on_ask: Callable[[], None] | None = None  # runs while a permission is asked
        self.on_save: Callable[[], None] | None = None  # runs as editor/saveDocuments comes
        self.diagnostics_fail = False
        self.diagnostics_answer: Any = None  # None: lint the text
        # What the sidecar asked, in order.
        self.applied: list[dict[str, Any]] = []
        self.save_asks: list[dict[str, Any]] = []
        self.opened: list[str] = []
        self.diagnostic_asks: list[dict[str, Any]] = []
        self.lsp_asks: list[dict[str, Any]] = []
        self.disk_written: list[str] = []  # editor/diskWritten uris
        self.withdrawn: list[str] = []  # permission/withdrawn ids

        @self.feature("editor/diskWritten")
        def disk_written(ls: FakeEditor, params: dict[str, Any]) -> None:
            ls.disk_written.extend(params["uris"])

        @self.feature("permission/withdrawn")
        def withdrawn(ls: FakeEditor, params: dict[str, Any]) -> None:
            ls.withdrawn.append(params["id"])

        @self.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(
            ls: FakeEditor, params: types.ApplyWorkspaceEditParams
        ) -> types.ApplyWorkspaceEditResult:
            edit = ls.protocol._converter.unstructure(params.edit)
            ls.applied.append({"label": params.label, "edit": edit})
            if ls.apply_reply == "error":
                raise EditorError(code=-32603, message="the buffer is locked")
            if ls.apply_reply == "refuse":
                return types.ApplyWorkspaceEditResult(False, "the user said no")
            for change in edit["documentChanges"]:
                uri, version = change["textDocument"]["uri"], change["textDocument"]["version"]
                buffer = ls.buffers[uri]
                if version is not None and version != buffer.version:
                    return types.ApplyWorkspaceEditResult(
                        False, f"version {version} is not the buffer's {buffer.version}"
                    )
                text = apply_text_edits(
                    buffer.text, change["edits"], position_encoding=ls.position_encoding
                )
                ls.type(buffer.path, text, notify=ls.announces)
            return types.ApplyWorkspaceEditResult(True)

        @self.feature("editor/saveDocuments")
        def save_documents(ls: FakeEditor, params: dict[str, Any]) -> dict[str, Any]:
            ls.save_asks.append(params)
            if ls.on_save is not None:
                ls.on_save()  # its didChange reaches the sidecar before this answer
            if ls.save_fails:
                raise EditorError(code=-32603, message="the disk is full")
            if not ls.saves:
                return {"saved": []}
            saved = []
            for uri in params["uris"]:
                buffer = ls.buffers[uri]
                if params.get("versions", {}).get(uri, buffer.version) != buffer.version:
                    continue  # typed in since: as VS Code and Neovim, not saved
                saved.append(uri)
                if ls.transform is not None:
                    ls.type(buffer.path, ls.transform(buffer.text))
                buffer.path.write_bytes(buffer.text.encode())
                ls.text_document_did_save(
                    types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
                )
            return {"saved": saved}

        @self.feature("editor/openDocument")
        async def open_document(ls: FakeEditor, params: dict[str, Any]) -> dict[str, Any]:
            ls.opened.append(params["uri"])
            await ls.open_gate.wait()
            return {}

        @self.feature("editor/diagnostics")
        def diagnostics(ls: FakeEditor, params: dict[str, Any]) -> dict[str, Any]:
            ls.diagnostic_asks.append(params)
            if ls.diagnostics_fail:
                raise EditorError(code=-32603, message="no diagnostics today")
            if ls.diagnostics_answer is not None:
                return ls.diagnostics_answer
            return {
                "items": [
                    {"uri": uri, "diagnostics": ls.lint(uri_path(uri))} for uri in params["uris"]
                ]
            }

        @self.feature("editor/lsp")
        def lsp(ls: FakeEditor, params: dict[str, Any]) -> Any:
            ls.lsp_asks.append(params)
            method = params["method"]
            if method in ls.lsp_errors:
                code, message = ls.lsp_errors[method]
                raise EditorError(code=code, message=message)
            return ls.lsp_answers.get(method)

        # The user may act while a prompt is open: replaces WireClient's handler.
        del self.protocol.fm.features["permission/ask"]

        @self.feature("permission/ask")
        async def permission_ask(ls: FakeEditor, params: dict[str, Any]) -> dict[str, Any]:
            ls.asks.append(params)
            if ls.on_ask is not None:
                ls.on_ask()  # its didChange reaches the sidecar before this answer
            if ls.ask_reply is None:
                await asyncio.Event().wait()  # never answers; only a cancel ends this
            return ls.ask_reply  # type: ignore[return-value]

    def report_server_error(self, error: Exception, source: Any) -> None:
        if not isinstance(error, EditorError):  # a scripted error answer is no failure
            super().report_server_error(error, source)

    def reset(self) -> None:
        """Back to a well-behaved editor with nothing recorded (module-scoped clients)."""
        self.apply_reply = None
        self.announces = True
        self.saves = True
        self.save_fails = False
        self.transform = None
        self.open_gate.set()
        self.on_ask = None
        self.on_save = None
        self.diagnostics_fail = False
        self.diagnostics_answer = None
        self.lsp_answers.clear()
        self.lsp_errors.clear()
        for record in (self.applied, self.save_asks, self.opened, self.diagnostic_asks):
            record.clear()
        self.lsp_asks.clear()
        self.asks.clear()
        self.disk_written.clear()
        self.withdrawn.clear()
        self.ask_reply = {"reply": "once"}

    # --- the editor's side of document sync ----------------------------------------------

    async def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = await super().open(path, text, version)
        self.buffers[uri] = Buffer(path, path.read_text() if text is None else text, version)
        return uri

    def type(self, path: Path, text: str, *, notify: bool = True) -> None:
        """Replace the buffer's text, as typing does; ``notify=False``: not sent yet."""
        buffer = self.buffers[path.as_uri()]
        buffer.text = text
        buffer.version += 1
        if notify:
            self.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(buffer.version, path.as_uri()),
                    [types.TextDocumentContentChangeWholeDocument(text)],
                )
            )

    def text_of(self, path: Path) -> str:
        buffer = self.buffers.get(path.as_uri())
        if buffer is not None:
            return buffer.text
        try:
            return path.read_text()
        except OSError:
            return ""

    # --- a tiny language server ------------------------------------------------------------

    def lint(self, path: Path) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for number, line in enumerate(self.text_of(path).splitlines()):
            for match in UNDEFINED.finditer(line):
                found.append(
                    diagnostic(number, match.start(), f"undefined name '{match[1]}'", code="E1")
                )
            if "WARN" in line:
                found.append(diagnostic(number, line.index("WARN"), "a warning", severity=2))
            for match in USES.finditer(line):
                if match[2] not in self.text_of(self.root / match[1]):
                    message = f"'{match[2]}' is not defined in {match[1]}"
                    found.append(diagnostic(number, match.start(), message, code="E2"))
        return found


def diagnostic(
    line: int, character: int, message: str, *, severity: int = 1, code: str | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "range": {
            "start": {"line": line, "character": character},
            "end": {"line": line, "character": character + 1},
        },
        "severity": severity,
        "message": message,
        "source": "fake",
    }
    if code is not None:
        found["code"] = code
    return found


def uri_path(uri: str) -> Path:
    from server.documents import uri_to_path

    real = uri_to_path(uri)
    assert real is not None
    return Path(real)


@contextlib.asynccontextmanager
async def connect_editor(
    root: Path,
    flags: dict[str, bool] | None = None,
    **options: Any,
) -> AsyncIterator[FakeEditor]:
    """A ``toolhost serve`` on ``root`` with a FakeEditor that declared ``flags``."""
    async with serve_to(
        FakeEditor(root), root, options={"editor": flags or {}, **options}
    ) as client:
        yield client
