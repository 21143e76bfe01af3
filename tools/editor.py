"""What a tool may ask of the editor it runs in, and the headless defaults.

``tools`` never imports the LSP adapter: ``server/`` subclasses ``EditorBridge``
and overrides what its client answers.  Every method here is the fallback a plain
client or a shell caller gets, so each one is correct on its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tools.errors import ToolError
from tools.permission.asks import PermissionReply, PermissionRequest, headless_rejection

if TYPE_CHECKING:
    from tools.changes.changeset import PreparedChange

log = logging.getLogger("toolhost.editor")

T = TypeVar("T")


class WritingCall(Protocol):
    """What landing a change needs of the call making it (``ToolContext`` is one)."""

    tool: str

    @property
    def worktree(self) -> Path: ...

    def real(self, path: Path) -> Path:
        """Where ``path`` was checked to be: the write goes there."""
        ...

    async def run_blocking(self, fn: Callable[..., T], *args: object) -> T: ...


Diagnostics = dict[Path, list[dict[str, Any]]]

NO_QUESTIONS = (
    "The editor cannot show questions (it did not declare `question` in "
    "initializationOptions.editor), so the user cannot be asked. Decide with what you "
    "know, and say in your answer what you assumed."
)
NO_TASKS = (
    "The editor cannot run sub-agents (it did not declare `task` in initializationOptions.editor)."
)

NO_LSP = (
    "The editor does not answer LSP requests (it did not declare `lsp` in "
    "initializationOptions.editor), so no language server can be asked. Use grep and read "
    "to find definitions and references instead."
)


class EditorRefusal(Exception):
    """The editor would not take a change, so nothing was changed.

    ``current_text`` is what a read would serve now (the buffer, else the disk): the
    pipeline shows the model the file around the change (``tools.changes.failures``).
    """

    def __init__(self, reason: str, current_text: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.current_text = current_text


class EditorBridge:
    """Headless behaviour: no buffers, nobody to ask, the disk is the only truth."""

    def __init__(self, *, approve_all: bool = False) -> None:
        self.approve_all = approve_all

    def capabilities(self) -> frozenset[str]:
        """Which client requests this editor answers (``initializationOptions.editor``)."""
        return frozenset()

    def position_encoding(self) -> str:
        """The LSP position encoding agreed with the client (``utf-8/16/32``)."""
        return "utf-16"

    def unsaved_text(self, path: Path | str) -> str | None:
        """The buffer's text when the editor holds unsaved changes for ``path``."""
        return None

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        if self.approve_all:
            return PermissionReply("once")
        raise headless_rejection(request)

    async def ask_questions(self, request: dict[str, Any]) -> list[list[str]] | None:
        """Ask the user ``request["questions"]`` (OpenCode's shape) in the editor.

        One list of chosen labels (or typed answers) per question; None when the user
        dismissed the questions.
        """
        raise ToolError(NO_QUESTIONS)

    async def run_task(self, request: dict[str, Any]) -> str:
        """Run a sub-agent's loop in the editor (``agent/task``); its last text."""
        raise ToolError(NO_TASKS)

    def prewarm(self, path: Path | str) -> None:
        """Let the editor's language servers start on ``path`` (best effort)."""

    def notify_update(self, update: dict[str, Any]) -> None:
        """A running tool's progress (``tools/update``)."""

    def show_message(self, message: str) -> None:
        """Tell the person something they need to know (not the model): best effort."""
        log.warning("%s", message)

    def disk_written(self, paths: list[Path]) -> None:
        """The sidecar wrote these files while their buffers keep unsaved changes."""

    # --- changing files ------------------------------------------------------------------

    def holds(self, path: Path) -> bool:
        """True when a change to ``path`` goes through the editor's buffer, not the disk."""
        return False

    async def write_change(self, ctx: WritingCall, prepared: PreparedChange) -> None:
        """Land a change on disk; an editor with the file open applies it to the buffer.

        Raises EditorRefusal when the editor refuses the change (nothing was changed then).
        Either way, when this returns the disk holds the new content; an editor that
        saved something else (a format-on-save) sets ``prepared.note``.
        """
        from tools.fsio.text import atomic_write  # with ctypes: not for a listing

        change = prepared.change
        real = ctx.real(change.path)  # where the path was checked to be
        await ctx.run_blocking(
            lambda: atomic_write(change.path, change.encoded, change.mode, real=real)
        )

    async def undo_change(
        self, ctx: WritingCall, prepared: PreparedChange, disk_before: bytes | None
    ) -> None:
        """Put back a change ``write_change`` made (a multi-file change failed later on).

        The disk gets ``disk_before`` again (None: the file did not exist).  Not run
        in a worker thread: it also runs while a cancelled call winds down.
        """
        from tools.fsio.text import atomic_write

        path = prepared.change.path
        if disk_before is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        else:
            atomic_write(path, disk_before, prepared.change.mode)

    # --- language servers ----------------------------------------------------------------

    async def diagnostics(
        self, paths: list[Path], wait_ms: int | None = None
    ) -> Diagnostics | None:
        """The editor's LSP diagnostics for ``paths`` (and any other file it reports).

        ``wait_ms`` 0 answers at once (a baseline); None waits, up to the configured
        bound, until the language servers have reported on the latest change.  None
        is returned when the editor could not be asked; ``{}`` when it has nothing.
        """
        return {}

    def open_documents(self) -> list[Path]:
        """Files the editor has open (for write's report on other files)."""
        return []

    async def lsp_request(self, method: str, params: dict[str, Any]) -> Any:
        """A read-only LSP request answered by the editor's own language servers."""
        raise ToolError(NO_LSP)
