"""``grep``: search file contents with a regex, newest files first (reference §6.8)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from tools.context import ToolContext
from tools.errors import NotFoundError, ToolError
from tools.paths import assert_external_directory, resolve
from tools.result import ToolResult
from tools.rg import RgExit, Ripgrep, check_glob_error, error_line
from tools.tool import Annotations, define

LIMIT = 100
MAX_LINE_LENGTH = 2000
# A UTF-8 character is at most 4 bytes, so this many bytes always hold the first
# MAX_LINE_LENGTH characters: a huge (minified) line is never kept whole.
_KEEP_BYTES = 4 * MAX_LINE_LENGTH + 4
# Kept lines are pruned to the current best LIMIT once they pass this many, so
# memory stays bounded however many matches rg reports (all are still counted).
_PRUNE_AT = 20 * LIMIT


class GrepParams(BaseModel):
    pattern: str = Field(
        description="Regular expression (ripgrep syntax) to search file contents for"
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search in; defaults to the project directory",
    )
    include: str | None = Field(
        default=None,
        description='Glob of the files to search, e.g. "*.py" or "*.{ts,tsx}"',
    )


@dataclass
class _FileHits:
    """One file's matches as rg reported them (files arrive whole, one after another)."""

    path: bytes
    mtime: int
    order: int
    lines: list[tuple[int, bytes]] = field(default_factory=list)

    def rank(self) -> tuple[int, int]:
        # Newest first; equal mtimes keep rg's order (OpenCode's sort is stable).
        return (-self.mtime, self.order)


@dataclass
class Matches:
    """Every match counted; only the lines that can still be shown are kept."""

    files: dict[bytes, _FileHits] = field(default_factory=dict)
    total: int = 0
    kept: int = 0

    def add(self, record: bytes) -> None:
        path, sep, rest = record.partition(b"\0")
        number, bar, text = rest.partition(b"|")
        if not sep or not bar or not number.isdigit():
            return  # not a match line (e.g. rg's "binary file matches" notice)
        hits = self.files.get(path)
        if hits is None:
            hits = self.files[path] = _FileHits(path, _mtime(path), self.total)
        self.total += 1
        if len(hits.lines) < LIMIT:
            hits.lines.append((int(number), text.removesuffix(b"\r")[:_KEEP_BYTES]))
            self.kept += 1
            if self.kept > _PRUNE_AT:
                self._prune()

    def ranked(self) -> list[_FileHits]:
        return sorted(self.files.values(), key=_FileHits.rank)

    def _prune(self) -> None:
        """Drop files ranked below the best LIMIT lines; later files only push them lower."""
        self.kept = 0
        for hits in self.ranked():
            if self.kept >= LIMIT:
                del self.files[hits.path]
            else:
                self.kept += len(hits.lines)


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
    if status.code not in (0, 2):
        raise ToolError(f"ripgrep failed: {status.stderr or f'exit status {status.code}'}")
    truncated = matches.total > LIMIT
    return ToolResult(
        title=args.pattern,
        output=render(matches, truncated=truncated, partial=status.code == 2),
        metadata={"matches": matches.total, "truncated": truncated},
    )


async def search_contents(
    search: Path, pattern: str, include: str | None
) -> tuple[Matches, RgExit]:
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
    args += ["--glob=!.git", "--", str(search)]
    matches = Matches()
    async with Ripgrep(args) as rg:
        async for records in rg:
            for record in records:
                matches.add(record)
    assert rg.exit is not None  # read to the end, so rg's own status is known
    return matches, rg.exit


def _raise_failure(status: RgExit, pattern: str, include: str | None) -> None:
    """Nothing matched: explain a failure, or return for an ordinary "No files found"."""
    if status.code in (0, 1) or (status.code == 2 and not status.stderr):
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


def render(matches: Matches, *, truncated: bool, partial: bool) -> str:
    header = f"Found {matches.total} matches"
    lines = [header + (f" (showing first {LIMIT})" if truncated else "")]
    shown = 0
    for hits in matches.ranked():
        if shown == LIMIT:
            break
        if shown:
            lines.append("")
        lines.append(f"{hits.path.decode('utf-8', 'replace')}:")
        for number, text in hits.lines[: LIMIT - shown]:
            lines.append(f"  Line {number}: {_cut(text.decode('utf-8', 'replace'))}")
            shown += 1
    if truncated:
        hidden = matches.total - LIMIT
        lines += [
            "",
            f"(Results truncated: showing {LIMIT} of {matches.total} matches ({hidden} hidden). "
            "Consider using a more specific path or pattern.)",
        ]
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
