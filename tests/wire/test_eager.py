"""Eager calls: a ``tools/execute`` of a tool marked ``eager`` takes its first step
inside ``receive``, before it has a task (``ToolhostProtocol.start_eagerly_when``).

One that never waits is answered before ``receive`` returns; one that waits goes on in
a task from where it stopped, and is cancelled, answered and isolated exactly as a call
that started in a task. In-process, as tests/wire/test_cancel.py drives the server.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from pathlib import Path
from typing import Any

import pytest

from server.options import InitOptions
from server.sidecar import ToolhostServer
from server.state import ServerState
from tests.wire.test_cancel import CANCELLED, Calls, Sleeper, cancel_from_inside
from tests.wire.test_internal import Capture, send, served  # noqa: F401 - the fixture
from tools.host import ToolHost
from tools.tool import define

STEP = contextvars.ContextVar("STEP", default="unset")


async def answer_at_once(args: Any, ctx: Any) -> str:
    return "at once"


async def current_task_in_first_step(args: Any, ctx: Any) -> str:
    return "a task" if asyncio.current_task() is not None else "no task"


class Waiter:
    """A tool that waits for a future the test settles, and reports what it got."""

    def __init__(self) -> None:
        self.future: asyncio.Future[str] | None = None

    async def run(self, args: Any, ctx: Any) -> str:
        STEP.set("set by the call")
        self.future = asyncio.get_running_loop().create_future()
        try:
            got = await self.future
        except LookupError as error:
            got = f"raised {error}"
        return f"{got}; STEP={STEP.get()}"


class EagerCalls(Calls):
    def __init__(self, *args: Any, waiter: Waiter) -> None:
        super().__init__(*args)
        self.waiter = waiter

    def answered(self, msg_id: int) -> bool:
        return any(m.get("id") == msg_id and "method" not in m for m in self.capture.messages)

    async def output(self, msg_id: int) -> str:
        output: str = (await self.capture.response(msg_id))["result"]["output"]
        return output


def _tools(sleeper: Sleeper, waiter: Waiter, *, eager: bool) -> list[Any]:
    return [
        define("sleepy", execute=sleeper.run, description="Waits.", eager=eager),
        define("inside", execute=cancel_from_inside, description="Is cancelled.", eager=eager),
        define("quick", execute=answer_at_once, description="Answers.", eager=eager),
        define("waiter", execute=waiter.run, description="Waits for the test.", eager=eager),
        define("current", execute=current_task_in_first_step, description="Tells.", eager=eager),
    ]


@pytest.fixture(params=[True, False], ids=["eager", "in a task"])
def calls(
    request: pytest.FixtureRequest,
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    tmp_path: Path,
) -> EagerCalls:
    server, capture = served
    sleeper, waiter = Sleeper(), Waiter()
    host = ToolHost(tmp_path, tools=_tools(sleeper, waiter, eager=request.param))
    server._state = ServerState(InitOptions(), host, "ses_eager")
    return EagerCalls(server, capture, sleeper, waiter=waiter)


def is_eager(calls: EagerCalls) -> bool:
    return calls.server.state.host.starts_eagerly("quick")


async def test_a_call_that_never_waits_is_answered_inside_receive(calls: EagerCalls) -> None:
    calls.execute(1, "quick")
    assert calls.answered(1) is is_eager(calls)  # in a task: not before the loop turns
    assert await calls.output(1) == "at once"


async def test_the_first_step_has_a_current_task_where_python_has_eager_tasks(
    calls: EagerCalls,
) -> None:
    # On 3.11 an eager call's first step runs with no task: why Tool.eager is opt-in.
    # receive is called from a loop callback, as a pipe's data_received is, not a task.
    asyncio.get_running_loop().call_soon(calls.execute, 9, "current")
    has_task = not is_eager(calls) or sys.version_info >= (3, 12)
    assert await calls.output(9) == ("a task" if has_task else "no task")


async def test_a_waiting_call_goes_on_in_a_task_with_what_it_waited_for(
    calls: EagerCalls,
) -> None:
    calls.execute(2, "waiter")
    for _ in range(5):
        await asyncio.sleep(0)
    assert calls.waiter.future is not None and not calls.answered(2)
    calls.waiter.future.set_result("the value sent")
    assert await calls.output(2) == "the value sent; STEP=set by the call"


async def test_an_exception_reaches_the_waiting_call(calls: EagerCalls) -> None:
    calls.execute(3, "waiter")
    for _ in range(5):
        await asyncio.sleep(0)
    assert calls.waiter.future is not None
    calls.waiter.future.set_exception(LookupError("a fault"))
    assert await calls.output(3) == "raised a fault; STEP=set by the call"


async def test_what_the_call_sets_stays_in_its_own_context(calls: EagerCalls) -> None:
    calls.execute(4, "waiter")
    assert STEP.get() == "unset"  # the first step ran in a copy of the context
    for _ in range(5):
        await asyncio.sleep(0)
    assert calls.waiter.future is not None
    calls.waiter.future.set_result("done")
    await calls.output(4)
    assert STEP.get() == "unset"


async def test_cancelled_in_the_same_turn_it_started(calls: EagerCalls) -> None:
    calls.execute(5, "sleepy")  # eager: started and waiting; else not started yet
    assert calls.sleeper.started.is_set() is is_eager(calls)
    calls.cancel(5)  # before the task that goes on with it has taken a step
    assert await calls.codes(5) == [CANCELLED]
    assert calls.sleeper.stopped is is_eager(calls)  # a started call ran its cleanup


async def test_cancelled_while_waiting(calls: EagerCalls) -> None:
    calls.execute(6, "sleepy")
    await asyncio.wait_for(calls.sleeper.started.wait(), 5)
    for _ in range(5):
        await asyncio.sleep(0)
    calls.cancel(6)
    assert await calls.codes(6) == [CANCELLED]
    assert calls.sleeper.stopped


async def test_cancelled_from_inside_its_first_step(calls: EagerCalls) -> None:
    calls.execute(7, "inside")
    assert await calls.codes(7) == [CANCELLED]


async def test_the_builtin_read_of_a_small_file_is_answered_inside_receive(
    served: tuple[ToolhostServer, Capture],  # noqa: F811
    tmp_path: Path,
) -> None:
    server, capture = served
    (tmp_path / "small.txt").write_text("one line\n")
    server._state = ServerState(InitOptions(), ToolHost(tmp_path), "ses_eager_read")
    args = {"filePath": str(tmp_path / "small.txt")}
    send(server, id=9, method="tools/execute", params={"tool": "read", "args": args})
    answers = [m for m in capture.messages if m.get("id") == 9]
    assert answers, "the read was not answered inside receive"
    assert "1: one line" in answers[0]["result"]["output"]
