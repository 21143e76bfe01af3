"""What a sub-agent runner is given and gives back: the ``task`` call's request, the
``Runner`` protocol every runner follows, and the failure it raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tools.agents.children import Child
    from tools.context import ToolContext


class SubagentFailed(Exception):
    """The sub-agent did not finish; the message says why (after ``task_id: …``)."""


@dataclass
class TaskRequest:
    child: Child
    description: str
    prompt: str
    resume: bool  # task_id named this child: its conversation continues
    command: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # the parent call's progress


class Runner(Protocol):
    name: str

    async def run(self, request: TaskRequest, ctx: ToolContext) -> str:
        """Run the child to completion; its last text.  Raises SubagentFailed."""
        ...
