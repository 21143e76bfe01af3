"""Path resolution, worktree-relative titles and the external-directory guard (§3.6)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tools.context import ToolContext


def resolve(path: str, base: Path) -> Path:
    """Absolute, normalised path (``..`` folded); symlinks are not resolved here."""
    expanded = os.path.expanduser(path)
    joined = expanded if os.path.isabs(expanded) else os.path.join(base, expanded)
    return Path(os.path.normpath(joined))


def real(path: Path) -> Path:
    """The path with every symlink resolved, even when the tail does not exist yet."""
    return Path(os.path.realpath(path))


def is_inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def relative(path: Path, worktree: Path) -> str:
    """Worktree-relative with forward slashes; absolute when outside the worktree."""
    try:
        return path.relative_to(worktree).as_posix() or "."
    except ValueError:
        return path.as_posix()


async def assert_external_directory(
    ctx: ToolContext, target: Path | None, kind: Literal["file", "directory"] = "file"
) -> None:
    """Ask ``external_directory`` for a target outside the project.

    Both the path as given and its symlink-resolved form must lie inside the
    directory or worktree: a link inside the project pointing out of it asks too.
    """
    if target is None:
        return
    roots = [real(ctx.directory), real(ctx.worktree)]
    resolved = real(target)
    if any(is_inside(resolved, root) for root in roots) and any(
        is_inside(target, root) for root in (ctx.directory, ctx.worktree, *roots)
    ):
        return
    outside = resolved if not any(is_inside(resolved, r) for r in roots) else target
    directory = outside if kind == "directory" else outside.parent
    glob = f"{directory.as_posix().rstrip('/')}/*"
    await ctx.ask(
        "external_directory",
        [glob],
        [glob],
        {"filepath": str(outside), "parentDir": str(directory)},
    )
