"""``glob``: find files by name pattern, newest first (reference §6.7)."""

from __future__ import annotations

import os
import re
import stat
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
# Models sometimes spell "no path" as a string.
_OMITTED = {"undefined", "null"}
# rg lets a --glob override .gitignore, and a match-everything glob matches ignored
# directories too (node_modules, build output...).  Such a pattern adds nothing as a
# filter, so it is not passed, and ignored files stay out as the model expects.
MATCH_ALL = re.compile(r"^(\*\*/)*\*{1,2}$")


@dataclass(frozen=True, kw_only=True)
class GlobParams(Arguments):
    pattern: str
    """Glob pattern to match file paths against, e.g. "**/*.py" or "src/**/*.{ts,tsx}" """
    path: str | None = None
    """Directory to search in; omit it to search the project directory. Never pass "undefined" or
    "null": leave the field out instead."""


async def execute(args: GlobParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("glob", [args.pattern], ["*"], {"pattern": args.pattern, "path": args.path})
    given = None if args.path in _OMITTED else args.path
    search = resolve(given, ctx.directory) if given else ctx.directory
    _require_directory(search)
    await assert_external_directory(ctx, search, "directory")

    found, truncated = await find(search, args.pattern)
    files = sorted(found, key=_mtime_desc)  # stable: equal mtimes keep rg's order
    if files:
        lines = [display for display, _ in files]
        if truncated:
            lines += [
                "",
                f"(Results are truncated: showing first {LIMIT} results. "
                "Consider using a more specific path or pattern.)",
            ]
        output = "\n".join(lines)
    else:
        output = "No files found"
    return ToolResult(
        title=relative(search, ctx.worktree),
        output=output,
        metadata={"count": len(files), "truncated": truncated},
    )


def _require_directory(search: os.PathLike[str]) -> None:
    try:
        mode = os.stat(search).st_mode
    except OSError:
        raise NotFoundError(f"glob path does not exist or is not accessible: {search}") from None
    if not stat.S_ISDIR(mode):
        raise ToolError(f"glob path must be a directory: {search}")


async def find(search: Path, pattern: str) -> tuple[list[tuple[str, int]], bool]:
    """Up to LIMIT matches as (absolute display path, mtime ns), and whether more exist.

    Like OpenCode, the first LIMIT files rg reports are the ones kept (then sorted):
    rg is stopped as soon as one more turns up, so a huge tree costs no more than that.
    """
    args = ["--files", "--null", "--hidden"]
    if not MATCH_ALL.match(pattern):
        args.append(f"--glob={pattern}")
    # Last, so that no pattern can bring .git back (rg: the later of two globs wins).
    args.append("--glob=!.git")
    args += secret_exclusions(search)  # toolhost's own folders below it are never listed
    root = os.fsencode(search)
    found: list[tuple[str, int]] = []
    async with Ripgrep(args, cwd=search, separator=b"\0") as rg:
        async for records in rg:
            for rel in records:
                if len(found) == LIMIT:
                    return found, True
                full = os.path.join(root, rel)
                found.append((full.decode("utf-8", "replace"), _stat_mtime(full)))
    if not found and rg.exit is not None:
        check_glob_error(rg.exit.stderr, f'glob pattern "{pattern}"')
        if rg.exit.code not in (0, 1, 2):  # killed by a signal, or a crash
            raise ToolError(f"ripgrep failed: {rg.exit.stderr or f'exit status {rg.exit.code}'}")
    return found, False


def _stat_mtime(path: bytes) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:  # gone since rg listed it: sorts last, as in OpenCode
        return 0


def _mtime_desc(item: tuple[str, int]) -> int:
    return -item[1]


tool = define(
    "glob",
    parameters=GlobParams,
    execute=execute,
    kind="search",
    annotations=Annotations(read_only=True, idempotent=True),
)
