"""``todowrite``: replace the session's task list (reference §6.12).

``todoread`` (its own module) shows the same list with the same title rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from tools.arguments.model import Arguments, as_json
from tools.context import ToolContext
from tools.result import ToolResult
from tools.tool import define


@dataclass(frozen=True, kw_only=True)
class TodoItem(Arguments):
    content: str
    """What needs doing, in a short imperative sentence"""
    status: Literal["pending", "in_progress", "completed", "cancelled"]
    """pending, in_progress (only one at a time), completed or cancelled"""
    priority: Literal["high", "medium", "low"]
    """high, medium or low"""
    id: str | None = None
    """A stable id for the item (optional)"""


@dataclass(frozen=True, kw_only=True)
class TodoWriteParams(Arguments):
    todos: list[TodoItem]
    """The whole updated list; it replaces the old one"""


def todo_result(todos: list[dict[str, Any]]) -> ToolResult:
    unfinished = sum(1 for item in todos if item["status"] != "completed")
    return ToolResult(
        title=f"{unfinished} todos",
        output=_pretty(todos),
        metadata={"todos": todos},
    )


def _pretty(todos: list[dict[str, Any]]) -> str:
    """``JSON.stringify(todos, null, 2)``: orjson writes exactly what
    ``json.dumps(indent=2, ensure_ascii=False)`` writes, several times faster."""
    try:
        return orjson.dumps(todos, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # what orjson refuses (a lone surrogate): the standard library
        return json.dumps(todos, indent=2, ensure_ascii=False)


async def write_todos(args: TodoWriteParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todowrite", ["*"], ["*"])
    todos = [as_json(item) for item in args.todos]
    ctx.session.todos = todos
    return todo_result(todos)


tool = define(
    "todowrite",
    parameters=TodoWriteParams,
    execute=write_todos,
    kind="think",
    eager=True,  # never waits
)
