"""``todoread``: this session's task list as it stands (reference §6.12)."""

from __future__ import annotations

from tools.builtin.todowrite import todo_result
from tools.context import ToolContext
from tools.result import ToolResult
from tools.tool import Annotations, NoArgs, define


async def read_todos(args: NoArgs, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todoread", ["*"], ["*"])
    return todo_result(ctx.session.todos)


tool = define(
    "todoread",
    execute=read_todos,
    kind="think",
    annotations=Annotations(read_only=True, idempotent=True),
    eager=True,  # never waits
)
