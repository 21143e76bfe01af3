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

from server.app import ToolhostServer
from server.options import InitOptions
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


@pytest.fixture
def sleeper(served: tuple[ToolhostServer, Capture], tmp_path: Path) -> Sleeper:  # noqa: F811
    server, _ = served
    sleeper = Sleeper()
    tools = [
        define("sleepy", execute=sleeper.run, description="Waits."),
        define("inside", execute=cancel_from_inside, description="Is cancelled."),
    ]
    server._state = ServerState(InitOptions(), ToolHost(tmp_path, tools=tools), "ses_cancel")
    return sleeper


def answers(capture: Capture, msg_id: int) -> list[dict[str, Any]]:
    return [m for m in capture.messages if m.get("id") == msg_id and "method" not in m]


async def settled(capture: Capture, msg_id: int) -> list[dict[str, Any]]:
    """Every answer to ``msg_id``, once the first has come and the loop has had time for
    a second one."""
    await capture.response(msg_id)
    for _ in range(20):
        await asyncio.sleep(0)
    return answers(capture, msg_id)


def execute(server: ToolhostServer, msg_id: int, tool: str) -> None:
    send(server, id=msg_id, method="tools/execute", params={"tool": tool, "args": {}})


async def test_cancelled_before_it_started(
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    sleeper: Sleeper,
) -> None:
    server, capture = served
    execute(server, 1, "sleepy")
    send(server, method="$/cancelRequest", params={"id": 1})  # the same turn of the loop
    found = await settled(capture, 1)
    assert [a["error"]["code"] for a in found] == [CANCELLED]
    assert not sleeper.started.is_set()


async def test_cancelled_while_running_is_answered_after_it_stopped(
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    sleeper: Sleeper,
) -> None:
    server, capture = served
    execute(server, 2, "sleepy")
    await asyncio.wait_for(sleeper.started.wait(), 5)
    original = capture.write

    def write(data: bytes) -> None:  # the tool's cleanup has run when the answer goes
        if b'"id":2' in data:
            assert sleeper.stopped
        original(data)

    capture.write = write  # type: ignore[method-assign]
    send(server, method="$/cancelRequest", params={"id": 2})
    found = await settled(capture, 2)
    assert [a["error"]["code"] for a in found] == [CANCELLED]


async def test_cancelled_from_inside_the_call(
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    sleeper: Sleeper,
) -> None:
    server, capture = served
    execute(server, 3, "inside")
    found = await settled(capture, 3)
    assert [a["error"]["code"] for a in found] == [CANCELLED]


async def test_a_finished_call_is_not_cancelled_afterwards(
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    sleeper: Sleeper,
) -> None:
    server, capture = served
    execute(server, 4, "no_such_tool")  # answered at once, with a result
    await capture.response(4)
    send(server, method="$/cancelRequest", params={"id": 4})  # too late: nothing more
    found = await settled(capture, 4)
    assert len(found) == 1 and "result" in found[0]
