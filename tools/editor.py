"""What a tool may ask of the editor it runs in, and the headless defaults.

``tools`` never imports the LSP adapter: ``server/`` subclasses ``EditorBridge``
and overrides what its client answers.  Every method here is the fallback a plain
client or a shell caller gets, so each one is correct on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.fsio import atomic_write
from tools.permission import PermissionReply, PermissionRequest, headless_rejection

if TYPE_CHECKING:
    from tools.changes import PreparedChange
    from tools.context import ToolContext


class EditorBridge:
    """Headless behaviour: no buffers, nobody to ask, the disk is the only truth."""

    def __init__(self, *, approve_all: bool = False) -> None:
        self.approve_all = approve_all

    def capabilities(self) -> frozenset[str]:
        """Which client requests this editor answers (``initializationOptions.editor``)."""
        return frozenset()

    def unsaved_text(self, path: Path) -> str | None:
        """The buffer's text when the editor holds unsaved changes for ``path``."""
        return None

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        if self.approve_all:
            return PermissionReply("once")
        raise headless_rejection(request)

    def prewarm(self, path: Path) -> None:
        """Let the editor's language servers start on ``path`` (best effort)."""

    def notify_update(self, update: dict[str, Any]) -> None:
        """A running tool's progress (``tools/update``)."""

    async def write_change(self, ctx: ToolContext, prepared: PreparedChange) -> None:
        """Land a change on disk; an editor with the file open applies it to the buffer."""
        change = prepared.change
        await ctx.run_blocking(atomic_write, change.path, change.encoded, change.mode)
