"""``grep``: search file contents with a regex (reference §6.8, OpenCode 1.18.33).

As in 1.18.33, rg is stopped as soon as one match more than ``LIMIT`` has arrived, and
the output then says "(more matches available)" instead of a total: a search with many
matches costs what its first 101 cost, not a scan of the whole tree.

The matches shown are grouped by file, newest file first. That order costs no scan:
only the files among the first ``LIMIT`` matches are stat'ed (at most 100), and they are
sorted among themselves; equal mtimes keep rg's order. So "newest first" holds among
the results shown, not over the whole tree (1.18.33 shows rg's order).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tools.arguments.model import Arguments
from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.fsio.paths import resolve
from tools.fsio.rg import RgExit, Ripgrep, check_glob_error, error_line
from tools.permission.external import assert_external_directory, secret_exclusions
from tools.result import ToolResult
from tools.tool import Annotations, define

LIMIT = 100
MAX_LINE_LENGTH = 2000
# A UTF-8 character is at most 4 bytes, so this many bytes always hold the first
# MAX_LINE_LENGTH characters: a huge (minified) line is never kept whole.
_KEEP_BYTES = 4 * MAX_LINE_LENGTH + 4


@dataclass(frozen=True, kw_only=True)
class GrepParams(Arguments):
    pattern: str
    """Regular expression (ripgrep syntax) to search file contents for"""
    path: str | None = None
    """File or directory to search in; defaults to the project directory"""
    include: str | None = None
    """Glob of the files to search, e.g. "*.py" or "*.{ts,tsx}" """


@dataclass
class _FileHits:
    """One file's matches, in the order rg reported them."""

    path: bytes
    order: int
    lines: list[tuple[int, bytes]] = field(default_factory=list)


@dataclass
class Matches:
    """The first ``LIMIT`` matches, by file; ``more`` once one beyond them arrived."""

    files: dict[bytes, _FileHits] = field(default_factory=dict)
    total: int = 0
    more: bool = False

    def add(self, record: bytes) -> bool:
        """Take one rg record; False once the limit is passed (stop reading)."""
        path, sep, rest = record.partition(b"\0")
        number, bar, text = rest.partition(b"|")
        if not sep or not bar or not number.isdigit():
            return True  # not a match line (e.g. rg's "binary file matches" notice)
        if self.total == LIMIT:
            self.more = True
            return False
        hits = self.files.get(path)
        if hits is None:
            hits = self.files[path] = _FileHits(path, len(self.files))
        hits.lines.append((int(number), text.removesuffix(b"\r")[:_KEEP_BYTES]))
        self.total += 1
        return True

    def ranked(self) -> list[_FileHits]:
        """Newest file first (at most ``LIMIT`` stats); equal mtimes keep rg's order."""
        return sorted(self.files.values(), key=lambda hits: (-_mtime(hits.path), hits.order))


async def execute(args: GrepParams, ctx: ToolContext) -> ToolResult:
    if not args.pattern:
        raise ToolError("pattern is required", kind="invalid_arguments")
    await ctx.ask(
        "grep",
        [args.pattern],
        ["*"],
        {"pattern": args.pattern, "path": args.path, "include": args.include},
    )
    search = resolve(args.path, ctx.directory) if args.path else ctx.directory
    if not search.exists():
        raise NotFoundError(f"Search path not found: {args.path or search}")
    await assert_external_directory(ctx, search, "directory" if search.is_dir() else "file")

    matches, status = await search_contents(search, args.pattern, args.include)
    if not matches.total:
        _raise_failure(status, args.pattern, args.include)
        return ToolResult(
            title=args.pattern,
            output="No files found",
            metadata={"matches": 0, "truncated": False},
        )
    if status is not None and status.code not in (0, 2):
        raise ToolError(f"ripgrep failed: {status.stderr or f'exit status {status.code}'}")
    return ToolResult(
        title=args.pattern,
        output=render(matches, partial=status is not None and status.code == 2),
        metadata={"matches": matches.total, "truncated": matches.more},
    )


async def search_contents(
    search: Path, pattern: str, include: str | None
) -> tuple[Matches, RgExit | None]:
    """The first matches, and rg's exit (None when we stopped it at the limit)."""
    # --null ends the file name with NUL, so a "|" in a file name cannot break parsing.
    args = [
        "-nH",
        "--null",
        "--hidden",
        "--no-messages",
        "--field-match-separator=|",
        "--regexp",
        pattern,
    ]
    if include:
        args.append(f"--glob={include}")
    # Last, so that no include glob can bring .git back (rg: the later of two globs wins).
    args += ["--glob=!.git"]
    # toolhost's own folders below it are never searched (globs anchored at rg's cwd)
    exclusions = secret_exclusions(search) if search.is_dir() else []
    args += [*exclusions, "--", str(search)]
    matches = Matches()
    async with Ripgrep(args, cwd=search if exclusions else None) as rg:
        async for records in rg:
            if not all(map(matches.add, records)):
                break  # leaving the block stops rg
    return matches, rg.exit


def _raise_failure(status: RgExit | None, pattern: str, include: str | None) -> None:
    """Nothing matched: explain a failure, or return for an ordinary "No files found"."""
    if status is None or status.code in (0, 1) or (status.code == 2 and not status.stderr):
        return
    if include:
        check_glob_error(status.stderr, f'include pattern "{include}"')
    if "regex" in status.stderr:
        raise ToolError(
            f'Invalid regex pattern "{pattern}": {error_line(status.stderr)}\n'
            "The pattern uses ripgrep's (Rust) regex syntax: escape characters such as "
            "( [ { . * + ? | with a backslash to match them literally.",
            kind="invalid_arguments",
        )
    raise ToolError(f"ripgrep failed: {status.stderr or f'exit status {status.code}'}")


def render(matches: Matches, *, partial: bool) -> str:
    header = f"Found {matches.total} matches"
    lines = [header + (" (more matches available)" if matches.more else "")]
    for hits in matches.ranked():
        if len(lines) > 1:
            lines.append("")
        lines.append(f"{hits.path.decode('utf-8', 'replace')}:")
        for number, text in hits.lines:
            lines.append(f"  Line {number}: {_cut(text.decode('utf-8', 'replace'))}")
    if matches.more:
        lines += ["", "(Results truncated. Consider using a more specific path or pattern.)"]
    if partial:
        lines += ["", "(Some paths were inaccessible and skipped)"]
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text[:MAX_LINE_LENGTH] + "..." if len(text) > MAX_LINE_LENGTH else text


def _mtime(path: bytes) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


tool = define(
    "grep",
    parameters=GrepParams,
    execute=execute,
    kind="search",
    annotations=Annotations(read_only=True, idempotent=True),
)
