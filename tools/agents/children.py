"""Child sessions: the sessions ``task`` starts, what they may do, and their runs.

A ``Child`` outlives the ``task`` call that made it, so a later call with its
``task_id`` resumes it (the sidecar's runner keeps the conversation in
``history``; an editor's runner keeps its own).  While a ``task`` call runs it
(``run``), every tool call made in the child session, by whichever runner, is
reported to the parent call as progress and is cancelled with it.  Outside a run
the child session takes no tool calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tools.agents.catalog import Agent
from tools.agents.policy import ChildPolicy
from tools.model import ModelRef

if TYPE_CHECKING:
    import asyncio

    from tools.result import ToolResult

# How many of the child's calls a progress update lists (the newest).
SHOWN_CALLS = 50


@dataclass
class ChildCall:
    call_id: str
    tool: str
    title: str
    status: str = "running"  # running | completed | error | cancelled

    def to_wire(self) -> dict[str, str]:
        return {
            "callID": self.call_id,
            "tool": self.tool,
            "title": self.title,
            "status": self.status,
        }


class Progress(Protocol):
    """Where a run reports its child's calls: the parent ``task`` call's ``ToolContext``."""

    def metadata(self, title: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        """Rate-limited progress."""
        ...

    def metadata_now(
        self, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        """Progress at once, past the rate limit."""
        ...


@dataclass
class ChildRun:
    """One ``task`` call running a child: its progress, and what to cancel with it."""

    ctx: Progress  # the parent's call
    description: str
    metadata: dict[str, Any]
    calls: list[ChildCall] = field(default_factory=list)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def started(self, call_id: str, tool: str, args: Any) -> None:
        self.calls.append(ChildCall(call_id, tool, call_title(tool, args)))
        self.ctx.metadata_now(self.description, self.progress())  # each call is shown

    def finished(self, call_id: str, result: ToolResult) -> None:
        for call in self.calls:
            if call.call_id == call_id:
                call.status = "error" if result.is_error else "completed"
                if result.title:  # e.g. read's is the path: keep the tool's name in front
                    title = result.title
                    call.title = title if title.startswith(call.tool) else f"{call.tool} {title}"
        self.report()

    def cancelled(self, call_id: str) -> None:
        for call in self.calls:
            if call.call_id == call_id and call.status == "running":
                call.status = "cancelled"
        self.report()

    def progress(self) -> dict[str, Any]:
        return {**self.metadata, "calls": [c.to_wire() for c in self.calls[-SHOWN_CALLS:]]}

    def report(self) -> None:
        self.ctx.metadata(self.description, self.progress())

    def cancel(self) -> None:
        for task in list(self.tasks):
            task.cancel()


@dataclass
class Child:
    session_id: str
    parent_session_id: str
    parent_agent: str
    agent: Agent
    depth: int  # 1: started by a top-level session
    title: str
    policy: ChildPolicy
    model: ModelRef | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    run: ChildRun | None = None

    @contextlib.contextmanager
    def running(self, run: ChildRun) -> Iterator[ChildRun]:
        """The child runs for one ``task`` call; its tool calls end with it."""
        self.run = run
        try:
            yield run
        finally:
            self.run = None
            run.cancel()


def call_title(tool: str, args: Any) -> str:
    """A short title for a child's call before its result names it."""
    if isinstance(args, dict):
        for key in ("description", "filePath", "path", "pattern", "command", "url", "name"):
            value = args.get(key)
            if isinstance(value, str) and value:
                first = value.splitlines()[0] if value.strip() else value
                return f"{tool} {first[:77] + '...' if len(first) > 80 else first}"
    return tool
