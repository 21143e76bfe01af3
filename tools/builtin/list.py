"""``list``: a directory's files as an indented tree (reference §6.9)."""

from __future__ import annotations

import os
import posixpath
import stat
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tools.arguments.model import Arguments
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio.paths import relative, resolve
from tools.fsio.rg import Ripgrep, check_glob_error
from tools.permission.external import assert_external_directory, secret_exclusions
from tools.result import ToolResult
from tools.tool import Annotations, define

LIMIT = 100
# OpenCode's built-in ignore list.  A trailing "/" means "a directory of this name".
IGNORE_PATTERNS = (
    "node_modules/",
    "__pycache__/",
    ".git/",
    "dist/",
    "build/",
    "target/",
    "vendor/",
    "bin/",
    "obj/",
    ".idea/",
    ".vscode/",
    ".zig-cache/",
    "zig-out",
    ".coverage",
    "coverage/",
    "tmp/",
    "temp/",
    ".cache/",
    "cache/",
    "logs/",
    ".venv/",
    "venv/",
    "env/",
)


@dataclass(frozen=True, kw_only=True)
class ListParams(Arguments):
    path: str | None = None
    """Directory to list (absolute, or relative to the project directory); defaults to the
    project directory"""
    ignore: list[str] | None = None
    """Glob patterns of files and directories to leave out, e.g. "*.log" """


def ignore_globs(user: list[str] | None) -> list[str]:
    """rg exclusion globs.

    ``!name/`` hides a directory of that name at any depth.  OpenCode passes
    ``!name/*``, which rg anchors at the search root, so its list showed nested
    ``packages/app/node_modules``; hiding them everywhere is what the list is for.
    Names without "/" keep OpenCode's prefix match (``.coverage.*`` data files).
    """
    built_in = [f"!{p}" if p.endswith("/") else f"!{p}*" for p in IGNORE_PATTERNS]
    return built_in + [f"!{p}" for p in user or []]


async def execute(args: ListParams, ctx: ToolContext) -> ToolResult:
    search = resolve(args.path or ".", ctx.directory)
    await assert_external_directory(ctx, search, "directory")
    await ctx.ask("list", [str(search)], ["*"], {"path": str(search)})
    _require_directory(search)

    files = await list_files(search, ignore_globs(args.ignore))
    return ToolResult(
        title=relative(search, ctx.worktree),
        output=f"{search.as_posix()}/\n" + render_tree(files),
        # As in OpenCode, exactly LIMIT files also counts as truncated.
        metadata={"count": len(files), "truncated": len(files) >= LIMIT},
    )


def _require_directory(search: Path) -> None:
    try:
        mode = os.stat(search).st_mode
    except OSError:
        raise NotFoundError(f"Directory not found: {search}") from None
    if not stat.S_ISDIR(mode):
        raise ToolError(
            f"list path must be a directory: {search}\nUse the read tool to read a file."
        )


async def list_files(search: Path, globs: list[str]) -> list[str]:
    """Up to LIMIT files under ``search``, relative, with forward slashes."""
    args = ["--files", "--null", "--hidden", "--glob=!.git", *(f"--glob={g}" for g in globs)]
    args += secret_exclusions(search)  # toolhost's own folders below it are never listed
    files: list[str] = []
    async with Ripgrep(args, cwd=search, separator=b"\0") as rg:
        async for records in rg:
            for rel in records:
                files.append(rel.decode("utf-8", "replace").replace(os.sep, "/"))
                if len(files) == LIMIT:
                    return files
    if not files and rg.exit is not None:
        check_glob_error(rg.exit.stderr, "ignore pattern")
    return files


def render_tree(files: list[str]) -> str:
    """Directories first (sorted), then files (sorted), two spaces per level."""
    dirs: set[str] = set()
    by_dir: defaultdict[str, list[str]] = defaultdict(list)
    for file in files:
        parent = posixpath.dirname(file) or "."
        parts = [] if parent == "." else parent.split("/")
        dirs.add(".")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        by_dir[parent].append(posixpath.basename(file))
    children: defaultdict[str, list[str]] = defaultdict(list)
    for d in dirs:
        if d != ".":
            children[posixpath.dirname(d) or "."].append(d)

    # Depth-first with an explicit stack: a very deep path cannot hit the recursion limit.
    out: list[str] = []
    stack: list[tuple[str, int] | str] = [(".", 0)] if files else []
    while stack:
        top = stack.pop()
        if isinstance(top, str):
            out.append(top)  # a directory's file lines, after its sub-directories
            continue
        directory, depth = top
        if depth > 0:
            out.append(f"{'  ' * depth}{posixpath.basename(directory)}/\n")
        indent = "  " * (depth + 1)
        stack.append("".join(f"{indent}{name}\n" for name in sorted(by_dir[directory])))
        stack.extend((child, depth + 1) for child in sorted(children[directory], reverse=True))
    return "".join(out)


tool = define(
    "list",
    parameters=ListParams,
    execute=execute,
    kind="read",
    annotations=Annotations(read_only=True, idempotent=True),
)
