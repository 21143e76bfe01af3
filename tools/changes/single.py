"""One file changed by one call, as ``edit``, ``write`` and ``multiedit`` change it: the path
required and guarded, the file locked and loaded as the agent sees it, the read-before-write
check, the transform, the commit. Each tool brings only its transform and its own words."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tools.changes.commit import Committed, commit_file, locked
from tools.changes.load import load, load_existing, require_path
from tools.permission.external import assert_external_directory

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.fsio import TextFile

# What the file must be before the change:
# - "existing": it exists, and the session read it since it last changed;
# - "new": it is loaded as it is, unchecked (the transform refuses one that exists);
# - "either": checked for a read only when it exists.
Existing = Literal["existing", "new", "either"]


@dataclass(frozen=True)
class NewText:
    """A transform's result: the file's whole new text."""

    text: str
    bom: bool = False  # a new file is written with a UTF-8 BOM (its content began with one)


@dataclass(frozen=True)
class Changed:
    path: Path
    before: TextFile | None  # None: the call created the file
    committed: Committed


# Given the resolved path and the file as the agent sees it (None: there is none yet).
Transform = Callable[[Path, "TextFile | None"], Awaitable[NewText]]


async def change_file(
    ctx: ToolContext,
    file_path: str,
    transform: Transform,
    *,
    existing: Existing,
    other_files: bool = False,
) -> Changed:
    """Change one file by ``transform``, holding its lock from the load to the commit.
    ``other_files``: the result also reports the other open files' diagnostics (``write``)."""
    path = require_path(file_path, ctx)
    await assert_external_directory(ctx, path, "file")
    async with locked(ctx, [path]):
        before: TextFile | None
        if existing == "existing":
            before, unsaved = await load_existing(ctx, path)
            ctx.session.assert_fresh(path)
        else:
            before, unsaved = await load(ctx, path)
            if existing == "either" and before is not None:
                ctx.session.assert_fresh(path)
        new = await transform(path, before)
        committed = await commit_file(
            ctx, path, before, new.text, unsaved, other_files=other_files, bom=new.bom
        )
    return Changed(path, before, committed)
