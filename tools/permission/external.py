"""The external-directory guard every file tool passes (reference §3.6): a target outside
the project, as written or with its symlinks resolved, asks ``external_directory``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tools.fsio.openat2 import has_no_symlinks, is_own_real_path
from tools.fsio.paths import real_under_text

if TYPE_CHECKING:
    from tools.context import ToolContext


async def assert_external_directory(
    ctx: ToolContext,
    target: Path | str | None,
    kind: Literal["file", "directory"] = "file",
    *,
    opened: bool = False,
) -> None:
    """Ask ``external_directory`` for a target outside the project.

    The target must lie inside the directory or the worktree both as written (with
    ``~`` and ``..`` resolved) and with its symlinks resolved (``real``): a link
    inside the project pointing out of it asks, and so does a path that reaches
    the project only through a link outside it. The ask names the directory the
    target really is in (for a new path: under its nearest existing ancestor).

    The real path judged is pinned for the call (``ctx.pins``): its file I/O goes
    there and nowhere else, however the path's links change afterwards.

    ``opened``: the caller holds ``target`` open from an ``openat2`` that followed no link
    (``open_for_reading``), which already proves it is its own real path.
    """
    if target is None:
        return
    # Text, not Paths, unless there is a person to ask: this runs for every file a call
    # touches.
    written_text = os.path.normpath(target)
    folder, name = os.path.split(written_text)
    resolved_text = written_text
    if name:
        if opened or is_own_real_path(written_text):
            # An existing path with no link on it, its name included: one openat2 says so.
            real_folder = folder
        else:
            # The folder resolved once (one with no link on it is its own real path: one
            # openat2, not an lstat per part); the name followed only if it is a link.
            real_folder = folder if has_no_symlinks(folder) else os.path.realpath(folder)
            resolved_text = real_under_text(real_folder, name)
        ctx.pins.pin(folder, real_folder)  # where the name itself lives (a delete)
    # physical: `link/..` is the link target's parent
    ctx.pins.pin(written_text, resolved_text)
    roots = ctx.host.roots  # inside a root: equal to it, or under it (one C-level test each)
    resolved_inside = resolved_text in roots.real or resolved_text.startswith(roots.real_prefixes)
    if resolved_inside and (
        written_text in roots.written or written_text.startswith(roots.written_prefixes)
    ):
        return
    written, resolved = Path(written_text), Path(resolved_text)
    outside = written if resolved_inside else resolved
    directory = outside if kind == "directory" else outside.parent
    glob = f"{directory.as_posix().rstrip('/')}/*"
    await ctx.ask(
        "external_directory",
        [glob],
        [glob],
        {"filepath": str(outside), "parentDir": str(directory)},
    )
