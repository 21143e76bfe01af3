"""The public ``tool(...)`` a custom tool file calls, mirroring OpenCode's ``tool({...})``.

::

    from pydantic import BaseModel, Field
    from tools import tool

    class Args(BaseModel):
        name: str = Field(description="用户名字")

    async def run(args, ctx):
        return {"title": "问候", "output": f"你好，{args.name}！"}

    default = tool(description="返回问候语", args=Args, execute=run)

``tool`` only records the definition; the loader names it after the file (and the
module-level name) and turns it into a ``Tool``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from tools.abort import AbortSignal

if TYPE_CHECKING:
    from tools.context import ToolContext


class NoArgs(BaseModel):
    """The arguments of a custom tool that declares none."""


class ToolDefinitionError(TypeError):
    """``tool(...)`` was called with something that cannot become a tool."""


@dataclass(frozen=True)
class ToolSpec:
    """What ``tool(...)`` returns: a definition waiting for its name."""

    description: str
    parameters: type[BaseModel]
    execute: Callable[..., Any]


def tool(
    definition: Mapping[str, Any] | None = None,
    /,
    *,
    description: str | None = None,
    args: type[BaseModel] | Mapping[str, Any] | None = None,
    execute: Callable[..., Any] | None = None,
) -> ToolSpec:
    """Define a custom tool.

    ``args`` is a pydantic model class, or a mapping of field name to a type or to a
    ``(type, Field(...))`` pair, or omitted for a tool without arguments. ``execute``
    (sync or async) gets the validated args and a context, and returns a string or a
    dict with ``output`` and optional ``title``, ``metadata`` and ``attachments``.
    OpenCode's one-object spelling, ``tool({"description": ..., ...})``, works too.
    """
    if definition is not None:
        if not isinstance(definition, Mapping):
            raise ToolDefinitionError(
                "tool() takes keyword arguments (description=..., args=..., execute=...) "
                f"or one dict with those keys, not {type(definition).__name__}"
            )
        unknown = set(definition) - {"description", "args", "execute"}
        if unknown:
            raise ToolDefinitionError(
                f"tool(): unknown key(s) {', '.join(sorted(unknown))}; "
                "expected description, args and execute"
            )
        description = definition.get("description", description)
        args = definition.get("args", args)
        execute = definition.get("execute", execute)
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(
            "tool(): description is required: a non-empty string telling the model "
            "what the tool does"
        )
    if execute is None:
        raise ToolDefinitionError(
            "tool(): execute is required: the function that runs the tool, "
            "e.g. execute=run where run(args, ctx) returns a string or a dict"
        )
    if not callable(execute):
        raise ToolDefinitionError(
            f"tool(): execute must be a function taking (args, ctx), got {type(execute).__name__}"
        )
    return ToolSpec(description.strip(), args_model(args), execute)


def args_model(args: type[BaseModel] | Mapping[str, Any] | None) -> type[BaseModel]:
    """The pydantic model for ``args`` (see ``tool``)."""
    if args is None:
        return NoArgs
    if isinstance(args, type) and issubclass(args, BaseModel):
        return args
    if not isinstance(args, Mapping):
        raise ToolDefinitionError(
            "tool(): args must be a pydantic model class, or a dict of field name to a "
            f"type or a (type, Field(...)) pair; got {_show_type(args)}"
        )
    fields: dict[str, Any] = {}
    for name, spec in args.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ToolDefinitionError(f"tool(): args key {name!r} is not a valid field name")
        if isinstance(spec, tuple):
            if len(spec) != 2 or not isinstance(spec[1], FieldInfo):
                raise ToolDefinitionError(
                    f"tool(): args[{name!r}] must be a type or a (type, Field(...)) pair"
                )
            fields[name] = spec
        elif isinstance(spec, FieldInfo):
            raise ToolDefinitionError(
                f"tool(): args[{name!r}] is a Field without a type; write (type, Field(...))"
            )
        else:
            fields[name] = (spec, ...)
    return create_model("Args", **fields)


def _show_type(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})" if len(repr(value)) <= 40 else type(value).__name__


class CustomContext:
    """The ``ctx`` a custom tool receives, with OpenCode's attribute names.

    ``metadata()`` may be called from a sync ``execute`` (which runs in a worker
    thread); it is handed to the event loop.
    """

    def __init__(self, ctx: ToolContext, loop: asyncio.AbstractEventLoop) -> None:
        self._ctx = ctx
        self._loop = loop

    @property
    def sessionID(self) -> str:  # OpenCode's spelling
        return self._ctx.session_id

    @property
    def messageID(self) -> str:
        return self._ctx.message_id

    @property
    def callID(self) -> str:
        return self._ctx.call_id

    @property
    def agent(self) -> str:
        return self._ctx.agent

    @property
    def abort(self) -> AbortSignal:
        """``ctx.abort.aborted`` turns true when the call is cancelled."""
        return self._ctx.abort

    @property
    def directory(self) -> str:
        return str(self._ctx.directory)

    @property
    def worktree(self) -> str:
        return str(self._ctx.worktree)

    def metadata(
        self,
        input: Mapping[str, Any] | None = None,
        /,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Report progress: ``ctx.metadata(title=..., metadata={...})`` or OpenCode's dict."""
        if input is not None:
            title = input.get("title", title)
            metadata = input.get("metadata", metadata)
        update = dict(metadata or {})
        if _on_loop(self._loop):
            self._ctx.metadata(title, update)
        else:
            self._loop.call_soon_threadsafe(self._ctx.metadata, title, update)

    async def ask(
        self,
        input: Mapping[str, Any] | str | None = None,
        /,
        *,
        permission: str | None = None,
        patterns: list[str] | None = None,
        always: list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Ask the user; returns when allowed, raises a permission error otherwise.

        ``await ctx.ask(permission="deploy", patterns=["prod"])``, or OpenCode's dict.
        """
        if isinstance(input, str):
            permission = input
        elif input is not None:
            permission = input.get("permission", permission)
            patterns = input.get("patterns", patterns)
            always = input.get("always", always)
            metadata = input.get("metadata", metadata)
        if not permission:
            raise ToolDefinitionError("ctx.ask(): permission is required")
        await self._ctx.ask(
            permission, list(patterns or ["*"]), list(always or []), dict(metadata or {})
        )


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )
