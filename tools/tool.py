"""The one shell every tool goes through (OpenCode's ``Tool.define``).

Validation, error conversion, cancellation and truncation live here so that a
tool body reads as its happy path plus the failures that belong to it.

A custom tool file writes ``from tools import tool`` and calls ``tool(...)``
(OpenCode's ``tool({...})``): that name is this module, made callable at the
bottom, so ``tools.tool`` always names the module and never a function bound
over it.  Calling it declares a custom tool (``tools.custom.api.tool``).
"""

from __future__ import annotations

import inspect
import logging
import sys
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tools.arguments import malformed
from tools.arguments.model import Arguments, json_schema_for, validator_for
from tools.errors import ToolError
from tools.result import Attachment, ToolResult
from tools.truncation import truncate_output

if TYPE_CHECKING:
    from pydantic_core import ValidationError

    from tools.context import Host, ToolContext

log = logging.getLogger("toolhost.tools")

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
Execute = Callable[[Any, "ToolContext"], Awaitable[ToolResult | dict[str, Any] | str]]


@dataclass(frozen=True)
class Caller:
    """Who a catalogue is built for: the agent, and the session when one is named."""

    agent: str = "build"
    session_id: str | None = None


# Appends what depends on the worktree or the caller (the skills found, the sub-agents
# the caller may start) to the static prose.
Describe = Callable[[str, "Host", Caller], str]
# Whether the tool can work here at all (``task``: only where a sub-agent runner
# exists), given the client's capabilities.
Available = Callable[["Host", frozenset[str]], bool]


@dataclass(frozen=True)
class Annotations:
    """MCP tool annotations, so the catalogue can be re-exported unchanged."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def to_wire(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


# A tool that takes no arguments (no docstring: it would become the schema's description).
@dataclass(frozen=True, kw_only=True)
class NoArgs(Arguments):
    pass


@dataclass(frozen=True)
class Tool:
    id: str
    description: str
    # An ``Arguments`` dataclass (the built-ins) or a pydantic model (custom tools).
    parameters: type[Any]
    execute: Execute
    kind: ToolKind = "other"
    annotations: Annotations = Annotations()
    # Client requests this tool cannot work without (no fallback): it is not listed
    # for clients that do not answer them.
    requires: frozenset[str] = frozenset()
    schema: dict[str, Any] | None = None  # filled by define(); built once, never per call
    describe: Describe | None = None
    available: Available | None = None
    # The call's first step may run at once, inside the protocol's ``receive``; one that
    # never waits is then answered with no task made (``ToolhostProtocol``). On Python
    # 3.11 that step has no task of its own, so only for a tool that, until its first
    # real wait, uses nothing that needs ``asyncio.current_task()`` (``asyncio.timeout``,
    # anyio, TaskGroup).
    eager: bool = False

    def described_for(self, host: Host, caller: Caller | None = None) -> Tool:
        """This tool with its description completed for ``host``'s worktree and the caller."""
        if self.describe is None:
            return self
        return replace(self, description=self.describe(self.description, host, caller or Caller()))

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "parameters": self.schema,
            "kind": self.kind,
            "annotations": self.annotations.to_wire(),
        }

    async def run(self, raw_args: Any, ctx: ToolContext) -> ToolResult:
        found = malformed.problems(raw_args)
        if found:
            return self.error_result(format_malformed(self, found), "invalid_arguments")
        try:
            args = validator_for(self.parameters)(raw_args)
        except _validation_error() as error:  # looked up only when something is raised
            return self.error_result(format_validation_error(self, error), "invalid_arguments")
        try:
            result = coerce_result(await self.execute(args, ctx), self.id)
        except ToolError as error:
            return self.error_result(error.message, error.kind, error.metadata)
        except Exception as error:  # a bug in a tool must not take the server down
            log.exception("tool %s raised", self.id)
            return self.error_result(
                f"The {self.id} tool failed unexpectedly ({type(error).__name__}: {error}). "
                "This is a fault in the tool, not in your input; it has been logged. "
                "You may retry, or continue another way.",
                "internal",
            )
        finally:
            ctx.finish()
        if "truncated" not in result.metadata:
            limits = ctx.host.config.tool_output
            cut = truncate_output(
                result.output,
                max_lines=limits.max_lines,
                max_bytes=limits.max_bytes,
                task_available=lambda: ctx.host.task_available(
                    ctx.agent, ctx.editor.capabilities(), ctx.session_id
                ),
            )
            result.output = cut.text
            result.metadata["truncated"] = cut.truncated
            if cut.output_path:
                result.metadata["outputPath"] = cut.output_path
        return result

    def error_result(
        self, message: str, kind: str, metadata: dict[str, Any] | None = None
    ) -> ToolResult:
        return ToolResult(
            title=self.id,
            output=message,
            metadata={**(metadata or {}), "error": kind},
            is_error=True,
        )


def _validation_error() -> type[ValidationError]:
    # pydantic_core's package import builds 80 TypedDicts (about 15 ms): a catalogue
    # that is only listed (``toolhost list``) never needs it.
    from pydantic_core import ValidationError

    return ValidationError


def coerce_result(produced: object, tool_id: str | None = None) -> ToolResult:
    """Tools (custom ones especially) may return a string or a dict.

    Anything else raises a ``ToolError`` (kind ``internal``) saying what came back.
    """
    if isinstance(produced, ToolResult):
        return produced
    if isinstance(produced, str):
        return ToolResult(title="", output=produced)
    if isinstance(produced, dict):
        return _result_from_dict(produced, tool_id)
    got = "nothing (None)" if produced is None else _a(type(produced).__name__)
    raise _shape_error(tool_id, f"returned {got}")


_SHAPE = (
    'a tool must return a string, or a dict with "output" (a string) and optional "title" '
    '(a string), "metadata" (a dict) and "attachments" (a list of {"mime", "url"} dicts)'
)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _shape_error(tool_id: str | None, problem: str) -> ToolError:
    name = f"The {tool_id} tool" if tool_id else "The tool"
    return ToolError(
        f"{name} {problem}; {_SHAPE}. This is a fault in the tool, not in your input. "
        "Continue another way.",
        kind="internal",
    )


def _result_from_dict(produced: dict[str, Any], tool_id: str | None) -> ToolResult:
    output = produced.get("output")
    if not isinstance(output, str):
        got = "no output" if output is None else f'an "output" that is {_a(type(output).__name__)}'
        raise _shape_error(tool_id, f"returned a dict with {got}")
    title = produced.get("title")
    if title is not None and not isinstance(title, str):
        raise _shape_error(tool_id, f'returned a "title" that is {_a(type(title).__name__)}')
    metadata = produced.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _shape_error(tool_id, f'returned "metadata" that is {_a(type(metadata).__name__)}')
    attachments: list[Attachment] = []
    for item in produced.get("attachments") or []:
        if isinstance(item, Attachment):
            attachments.append(item)
        elif (
            isinstance(item, dict)
            and isinstance(item.get("mime"), str)
            and isinstance(item.get("url"), str)
        ):
            attachments.append(Attachment(item["mime"], item["url"], item.get("filename")))
        else:
            raise _shape_error(tool_id, f"returned an attachment that is not valid: {item!r:.80}")
    return ToolResult(
        title=title or "", output=output, metadata=dict(metadata or {}), attachments=attachments
    )


def format_validation_error(tool: Tool, error: ValidationError) -> str:
    """Name each failing field and what it expects, then ask for a rewrite."""
    properties = (tool.schema or {}).get("properties", {})
    lines = [f"The {tool.id} tool was called with invalid arguments:"]
    for issue in error.errors():
        location = ".".join(str(part) for part in issue["loc"]) or "(arguments)"
        top = str(issue["loc"][0]) if issue["loc"] else ""
        expected = _expectation(properties.get(top, {}))
        if issue["type"] == "missing":
            problem = "is required but was not given"
        elif issue["type"] in ("model_type", "dataclass_type", "dict_type") and not issue["loc"]:
            problem = f"must be a JSON object of named arguments, got {_show(issue['input'])}"
        else:
            problem = f"{_lower_first(issue['msg'])} (got {_show(issue['input'])})"
        line = f"- {location}: {problem}"
        if expected:
            line += f"; expected {expected}"
        lines.append(line)
    lines.append("Please rewrite the input so it satisfies the expected schema.")
    return "\n".join(lines)


def format_malformed(tool: Tool, found: list[tuple[str, str]]) -> str:
    """As ``format_validation_error``, for strings no file system or process accepts."""
    lines = [f"The {tool.id} tool was called with invalid arguments:"]
    lines += [f"- {field}: {problem}" for field, problem in found]
    lines.append("Please rewrite the input so it satisfies the expected schema.")
    return "\n".join(lines)


def _expectation(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if "enum" in prop:
        return "one of " + ", ".join(repr(v) for v in prop["enum"])
    if kind is None:
        return ""
    text = f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
    description = prop.get("description")
    if description:
        text += f" ({description.rstrip('.')})"
    return text


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def define(
    id: str,
    *,
    parameters: type[Any] = NoArgs,
    execute: Execute,
    kind: ToolKind = "other",
    annotations: Annotations = Annotations(),
    requires: frozenset[str] | set[str] = frozenset(),
    description: str | None = None,
    describe: Describe | None = None,
    available: Available | None = None,
    eager: bool = False,
) -> Tool:
    """Declare a tool. Without ``description``, ``<id>.txt`` beside the caller is read."""
    if description is None:
        caller = sys._getframe(1).f_globals.get("__file__")
        if caller is None:
            raise ValueError(f"tool {id}: no description given and no module file to look beside")
        description = (Path(caller).with_name(f"{id}.txt")).read_text(encoding="utf-8").strip()
    if not inspect.iscoroutinefunction(execute):
        raise TypeError(f"tool {id}: execute must be an async function")
    return Tool(
        id=id,
        description=description,
        parameters=parameters,
        execute=execute,
        kind=kind,
        annotations=annotations,
        requires=frozenset(requires),
        schema=json_schema_for(parameters),
        describe=describe,
        available=available,
        eager=eager,
    )


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from tools.custom.api import tool as declare

        return declare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
