"""A running call's progress for the MCP client, in both doors: what the tool reports, as it
reports it, and a heartbeat while it reports nothing.

A test suite or a build run through an agent often outlives the agent's tool timeout.
Some clients restart that timer on each progress notification (OpenCode's MCP client,
whose SDK request sets ``resetTimeoutOnProgress``; Claude Code's idle timeout, 30 minutes
for a stdio server); a command that prints nothing for a while would still run out of
it. So while a call that carried a progress token runs, the client hears from it at
least every ``HEARTBEAT_SECONDS``: the latest line the command printed (or the tool's
title) again, with a higher ``progress``, as the protocol requires of each notification.
A tool's own updates go out as they come (the tool context already limits them to one
every 100 ms), and each one restarts the heartbeat's wait. Nothing is sent for a call
without a token, and nothing after the call has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from server.mcp.prompts import progress_message

HEARTBEAT_SECONDS = 1.0
# A notification's (progress, message): the doors put it on the wire.
Send = Callable[[int, str], None]


class CallProgress:
    """One call's progress notifications, numbered from 1."""

    def __init__(self, send: Send, *, heartbeat: float = HEARTBEAT_SECONDS) -> None:
        self._send = send
        self.heartbeat = heartbeat
        self.count = 0
        self.latest = "working"
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    def start(self) -> None:
        """Begin the heartbeat (the call has started)."""
        self._arm()

    def push(self, update: dict[str, Any]) -> None:
        """A ``tools/update`` of the running tool: sent at once. Not once the call is being
        cancelled: the client withdrew it (bash still says why it stopped, for an editor)."""
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            self.end()
            return
        self.latest = progress_message(update)
        self._emit()

    def end(self) -> None:
        """The call is over (answered, failed or cancelled): nothing more is sent."""
        self._ended = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _emit(self) -> None:
        if self._ended:
            return
        self.count += 1
        self._send(self.count, self.latest)
        self._arm()

    def _arm(self) -> None:
        if self._ended:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.heartbeat, self._emit)
