"""Blocking work awaited from the event loop, in threads that never hold the process."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a daemon thread, awaited.

    Not ``asyncio.to_thread``: loading custom tools may run npm for minutes, and
    ``asyncio.run`` waits for its executor's threads before the process may exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the awaiting task was cancelled
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = fn()
        except BaseException as raised:  # handed to the awaiting task
            error = raised
        # RuntimeError: the loop has closed, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"toolhost-{fn.__name__}", daemon=True).start()
    return await future
