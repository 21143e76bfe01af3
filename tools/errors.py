"""Tool failures, written for the model.

Every failure a tool reports is a ``ToolError``: its message is shown to the model
as the result ``output`` (what happened, then what to try next) and its ``kind``
becomes ``metadata.error`` on the wire.  The kinds:

==================== =========================================================
kind                 when
==================== =========================================================
invalid_arguments    the args do not satisfy the tool's schema
unknown_tool         no such tool (answered by the ``invalid`` tool)
permission_denied    a configured rule denies the call; the message names it
permission_rejected  the user said no (with their feedback, if any)
not_found            a file, directory or name the call refers to is missing
failed               the tool could not do what was asked
timeout              the tool ran out of time
internal             an unexpected exception (the traceback goes to the log)
==================== =========================================================

Cancellation is not a ToolError: it is the runtime's own cancellation
(``asyncio.CancelledError`` / ``tools.abort.Aborted`` in worker threads).
"""

from __future__ import annotations

from typing import Any, Literal

ErrorKind = Literal[
    "invalid_arguments",
    "unknown_tool",
    "permission_denied",
    "permission_rejected",
    "not_found",
    "failed",
    "timeout",
    "internal",
]


class ToolError(Exception):
    """A failure the model should see and can recover from."""

    kind: ErrorKind = "failed"

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.metadata = dict(metadata or {})


class NotFoundError(ToolError):
    kind: ErrorKind = "not_found"


class PermissionDeniedError(ToolError):
    """A configured rule denies the call."""

    kind: ErrorKind = "permission_denied"


class PermissionRejectedError(ToolError):
    """The user (or the headless policy) said no."""

    kind: ErrorKind = "permission_rejected"
