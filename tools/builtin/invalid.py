"""Answers calls to tools that do not exist (never listed)."""

from __future__ import annotations

from dataclasses import dataclass

from tools.arguments.model import Arguments
from tools.context import ToolContext
from tools.errors import ToolError
from tools.tool import define


@dataclass(frozen=True, kw_only=True)
class InvalidParams(Arguments):
    tool: str
    """The tool id the model asked for"""
    error: str
    """Why the call could not be made"""


async def execute(args: InvalidParams, ctx: ToolContext) -> str:
    raise ToolError(
        f"The arguments provided to the tool are invalid: {args.error}", kind="unknown_tool"
    )


tool = define("invalid", parameters=InvalidParams, execute=execute, kind="other")
