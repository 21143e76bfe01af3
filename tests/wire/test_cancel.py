"""A cancelled ``tools/execute`` is answered -32800 exactly once, after it has stopped.

In-process, as tests/wire/test_internal.py drives the server: ``receive`` lets a test
put a request and its ``$/cancelRequest`` in the same turn of the event loop, before
the request's task has started, which a client over a pipe can do but not reliably.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from server.options import InitOptions
from server.sidecar import ToolhostServer
from server.state import ServerState
from tests.wire.test_internal import Capture, send, served  # noqa: F401 - the fixture
from tools.host import ToolHost
from tools.tool import define

CANCELLED = -32800


class Sleeper:
    """A tool that waits until cancelled, noting when it started and when it stopped."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.stopped = False

    async def run(self, args: Any, ctx: Any) -> str:
        self.started.set()
        try:
            await asyncio.sleep(30)
        finally:
            self.stopped = True
        return "woke up"


async def cancel_from_inside(args: Any, ctx: Any) -> str:
    raise asyncio.CancelledError()  # as when the task a child call belongs to ends


class Calls:
    """The in-process server with the two tools above, and what a test does with it."""

    def __init__(self, server: ToolhostServer, capture: Capture, sleeper: Sleeper) -> None:
        self.server, self.capture, self.sleeper = server, capture, sleeper

    def execute(self, msg_id: int, tool: str) -> None:
        send(self.server, id=msg_id, method="tools/execute", params={"tool": tool, "args": {}})

    def cancel(self, msg_id: int) -> None:
        send(self.server, method="$/cancelRequest", params={"id": msg_id})

    async def codes(self, msg_id: int) -> list[int | None]:
        """The error code of every answer to ``msg_id`` (None for a result), once the
        first has come and the loop has had time for a second one."""
        await self.capture.response(msg_id)
        for _ in range(20):
            await asyncio.sleep(0)
        found = [m for m in self.capture.messages if m.get("id") == msg_id and "method" not in m]
        return [answer.get("error", {}).get("code") for answer in found]


@pytest.fixture
def calls(served: tuple[ToolhostServer, Capture], tmp_path: Path) -> Calls:  # noqa: F811
    server, capture = served
    sleeper = Sleeper()
    tools = [
        define("sleepy", execute=sleeper.run, description="Waits."),
        define("inside", execute=cancel_from_inside, description="Is cancelled."),
    ]
    server._state = ServerState(InitOptions(), ToolHost(tmp_path, tools=tools), "ses_cancel")
    return Calls(server, capture, sleeper)


async def test_cancelled_before_it_started(calls: Calls) -> None:
    calls.execute(1, "sleepy")
    calls.cancel(1)  # in the same turn of the loop: the call's task has not started
    assert await calls.codes(1) == [CANCELLED]
    assert not calls.sleeper.started.is_set()


async def test_cancelled_while_running_is_answered_after_it_stopped(calls: Calls) -> None:
    calls.execute(2, "sleepy")
    await asyncio.wait_for(calls.sleeper.started.wait(), 5)
    stopped_when_answered: list[bool] = []
    original = calls.capture.write

    def write(data: bytes) -> None:
        if b'"id":2' in data:
            stopped_when_answered.append(calls.sleeper.stopped)
        original(data)

    calls.capture.write = write  # type: ignore[method-assign]
    calls.cancel(2)
    assert await calls.codes(2) == [CANCELLED]
    assert stopped_when_answered == [True]  # the tool's cleanup ran before the answer went


async def test_cancelled_from_inside_the_call(calls: Calls) -> None:
    calls.execute(3, "inside")
    assert await calls.codes(3) == [CANCELLED]


async def test_a_finished_call_is_not_cancelled_afterwards(calls: Calls) -> None:
    calls.execute(4, "no_such_tool")  # answered at once, with a result
    await calls.capture.response(4)
    calls.cancel(4)  # too late: nothing more is sent
    assert await calls.codes(4) == [None]
