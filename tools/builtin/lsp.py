"""``lsp``: code intelligence from the editor's own language servers (reference §6.15).

The sidecar runs no language server: each operation becomes one ``editor/lsp``
request that the editor answers with the servers it already runs for the file.
So the tool needs a client that declared ``lsp`` and is listed only for those.
Positions are 1-based in the arguments (as ``read`` numbers lines) and 0-based on
the wire.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from tools.arguments.model import Arguments, AtLeast
from tools.changes.positions import position_units
from tools.context import ToolContext
from tools.errors import NotFoundError
from tools.fsio.paths import relative, resolve
from tools.permission.external import assert_external_directory
from tools.result import ToolResult
from tools.tool import Annotations, define

Operation = Literal[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
]

# operation -> the LSP method asked first
METHODS: dict[str, str] = {
    "goToDefinition": "textDocument/definition",
    "findReferences": "textDocument/references",
    "hover": "textDocument/hover",
    "documentSymbol": "textDocument/documentSymbol",
    "workspaceSymbol": "workspace/symbol",
    "goToImplementation": "textDocument/implementation",
    "prepareCallHierarchy": "textDocument/prepareCallHierarchy",
    "incomingCalls": "textDocument/prepareCallHierarchy",
    "outgoingCalls": "textDocument/prepareCallHierarchy",
}
CALLS = {
    "incomingCalls": "callHierarchy/incomingCalls",
    "outgoingCalls": "callHierarchy/outgoingCalls",
}


@dataclass(frozen=True, kw_only=True)
class LspParams(Arguments):
    operation: Operation
    """The question to ask the language server"""
    filePath: str
    """The file to ask about: absolute, or relative to the project directory"""
    line: Annotated[int, AtLeast(1)]
    """Line of the symbol, 1-based (as read numbers lines)"""
    character: Annotated[int, AtLeast(1)]
    """Column of the symbol on that line, 1-based"""


def line_text(path: Path, line: int, unsaved: str | None) -> str:
    """Line ``line`` (1-based) of the buffer or the file, without reading past it."""
    if unsaved is not None:
        lines = unsaved.splitlines()
        return lines[line - 1] if line <= len(lines) else ""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, 1):
            if number == line:
                return text.rstrip("\r\n")
    return ""


def to_units(text: str, character: int, encoding: str) -> int:
    """The model counts characters; LSP counts the negotiated encoding's units."""
    enc: Any = encoding if encoding in ("utf-8", "utf-32") else "utf-16"
    return position_units(text[: character - 1], enc) + max(0, character - 1 - len(text))


def request_params(operation: str, uri: str, line: int, character: int) -> dict[str, Any]:
    """The first request's params, with the position made 0-based."""
    document = {"uri": uri}
    position = {"line": line - 1, "character": character - 1}
    if operation == "workspaceSymbol":
        return {"query": ""}
    if operation == "documentSymbol":
        return {"textDocument": document}
    if operation == "findReferences":
        return {
            "textDocument": document,
            "position": position,
            "context": {"includeDeclaration": True},
        }
    return {"textDocument": document, "position": position}


def is_empty(result: Any) -> bool:
    return result is None or result == [] or result == {}


async def execute(args: LspParams, ctx: ToolContext) -> ToolResult:
    path = resolve(args.filePath, ctx.directory)
    await assert_external_directory(ctx, path, "file")
    await ctx.ask("lsp", ["*"], ["*"], {}, title=f"Ask the language server: {args.operation}")
    title = f"{args.operation} {relative(path, ctx.worktree)}:{args.line}:{args.character}"
    if not await ctx.run_blocking(Path.is_file, path):
        raise NotFoundError(f"File not found: {path}")
    ctx.editor.prewarm(path)  # so the editor has its language servers on the file
    uri = path.as_uri()
    text = await ctx.run_blocking(line_text, path, args.line, ctx.editor.unsaved_text(path))
    # request_params subtracts the 1 again: it takes a 1-based column.
    column = to_units(text, args.character, ctx.editor.position_encoding()) + 1
    result = await ctx.editor.lsp_request(
        METHODS[args.operation], request_params(args.operation, uri, args.line, column)
    )
    if args.operation in CALLS and not is_empty(result):
        items = result if isinstance(result, list) else [result]
        result = await ctx.editor.lsp_request(CALLS[args.operation], {"item": items[0]})
    output = (
        f"No results found for {args.operation}"
        if is_empty(result)
        else json.dumps(result, indent=2, ensure_ascii=False)
    )
    return ToolResult(title=title, output=output, metadata={"result": result})


tool = define(
    "lsp",
    parameters=LspParams,
    execute=execute,
    kind="search",
    annotations=Annotations(read_only=True, idempotent=True),
    requires={"lsp"},
)
