"""The abort signal a tool checks while it works.

Async code is cancelled by the event loop; work that runs in a worker thread cannot
be, so it polls this signal between steps and stops with ``Aborted``.  Nothing is
left half written because every write is a single atomic rename at the end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Aborted(Exception):
    """Raised inside worker threads when the call was cancelled."""


class AbortSignal:
    """A flag set once, read from any thread (a plain attribute: the GIL orders it)."""

    __slots__ = ("_aborted",)

    def __init__(self) -> None:
        self._aborted = False

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        self._aborted = True

    def check(self) -> None:
        """Raise ``Aborted`` if the call was cancelled (for worker threads)."""
        if self._aborted:
            raise Aborted()


async def run_blocking(abort: AbortSignal, fn: Callable[..., T], *args: object) -> T:
    """Run ``fn`` in a worker thread; on cancellation, signal it and wait for it to stop.

    Waiting (rather than abandoning the thread) is what guarantees that a cancelled
    call has really stopped touching files when the cancellation is answered.
    """
    import asyncio  # where it runs: `toolhost list` never imports it

    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, fn, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        abort.abort()
        # The thread's own outcome no longer matters; only that it has stopped.
        with contextlib.suppress(BaseException):
            await future
        raise
