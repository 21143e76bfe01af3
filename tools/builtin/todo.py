"""todowrite / todoread: the session's task list (reference §6.12).

Both tools live in one module because they share the item model and the title
rule; the registry loads ``tools.builtin.todo`` once and gets both.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from tools.context import ToolContext
from tools.result import ToolResult
from tools.tool import Annotations, define


class TodoItem(BaseModel):
    content: str = Field(description="What needs doing, in a short imperative sentence")
    status: Literal["pending", "in_progress", "completed", "cancelled"] = Field(
        description="pending, in_progress (only one at a time), completed or cancelled"
    )
    priority: Literal["high", "medium", "low"] = Field(description="high, medium or low")
    id: str | None = Field(default=None, description="A stable id for the item (optional)")


class TodoWriteParams(BaseModel):
    todos: list[TodoItem] = Field(description="The whole updated list; it replaces the old one")


def _result(todos: list[dict]) -> ToolResult:
    unfinished = sum(1 for item in todos if item["status"] != "completed")
    return ToolResult(
        title=f"{unfinished} todos",
        output=json.dumps(todos, indent=2, ensure_ascii=False),
        metadata={"todos": todos},
    )


async def write_todos(args: TodoWriteParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todowrite", ["*"], ["*"])
    todos = [item.model_dump(exclude_none=True) for item in args.todos]
    ctx.session.todos = todos
    return _result(todos)


async def read_todos(args: BaseModel, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todoread", ["*"], ["*"])
    return _result(ctx.session.todos)


todowrite = define(
    "todowrite",
    parameters=TodoWriteParams,
    execute=write_todos,
    kind="think",
)
todoread = define(
    "todoread",
    execute=read_todos,
    kind="think",
    annotations=Annotations(read_only=True, idempotent=True),
)
tools = [todowrite, todoread]
