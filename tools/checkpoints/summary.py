"""A checkpoint's runs merged into what it did: per path, what it held before the
checkpoint's first touch and what it holds after.

Written to ``summary.json`` when the turn ends, so later changes (the user's, another
agent's) are told apart from the turn's own at restore time. The hard links a run
kept of inodes that still live in the worktree become copies then, so an in-place
write made after the turn cannot reach a before-image.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.checkpoints.store import Before, State, inside_git, read_run, state_of


@dataclass
class PathChange:
    path: str
    before: Before
    after: State
    by: list[str] = field(default_factory=list)  # the tools that touched it
    action: str = "modified"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "action": self.action,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "by": self.by,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathChange:
        return cls(
            str(data["path"]),
            Before.from_json(data["before"]),
            State.from_json(data["after"]),
            list(data.get("by", [])),
            str(data.get("action", "modified")),
        )


def action_of(before: State, after: State) -> str:
    if before.kind == "absent":
        return "created"
    if after.kind == "absent":
        return "deleted"
    if before.kind != after.kind:
        return "replaced"
    if before.kind == "file" and before.sha != after.sha:
        return "modified"
    if before.kind == "symlink":
        return "modified"
    return "mode changed"


def runs_of(checkpoint: Path) -> list[Path]:
    runs = checkpoint / "runs"
    try:
        return sorted(p for p in runs.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []


def merge(checkpoint: Path, store: Path, roots: list[str]) -> list[PathChange]:
    """Every path the checkpoint's runs touched whose content differs now from before
    (``store``: the worktree's checkpoint folder, which blob paths are relative to)."""
    earliest: dict[str, Before] = {}
    tools: dict[str, list[str]] = {}
    for run in runs_of(checkpoint):
        tool = run.name.partition("-")[2] or "?"
        for before in read_run(run, store):
            if inside_git(before.path, roots):
                continue
            known = earliest.get(before.path)
            if known is None or before.t < known.t:
                earliest[before.path] = before
            names = tools.setdefault(before.path, [])
            if tool not in names:
                names.append(tool)
    changes = []
    for path, before in sorted(earliest.items()):
        after = state_of(path)
        was = before.state(store)
        if was == after:
            continue
        changes.append(PathChange(path, before, after, tools[path], action_of(was, after)))
    return changes


def detach_links(changes: list[PathChange], store: Path) -> None:
    """Before-images that are hard links to a live inode become copies."""
    for change in changes:
        if not change.before.blob:
            continue
        blob = store / change.before.blob
        try:
            if os.stat(blob).st_nlink <= 1:
                continue
            fresh = blob.with_name(blob.name + ".copy")
            shutil.copyfile(blob, fresh)
            os.replace(fresh, blob)
        except OSError:
            continue


def git_head(worktree: Path) -> str | None:
    """The commit HEAD names, read from git's files (never by running git)."""
    git = worktree / ".git"
    try:
        if git.is_file():
            text = git.read_text(encoding="utf-8")
            git = (worktree / text.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head
    ref = head.removeprefix("ref:").strip()
    common = git
    with contextlib.suppress(OSError):
        common = (git / (git / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (git, common):
        with contextlib.suppress(OSError):
            return (base / ref).read_text(encoding="utf-8").strip()
    with contextlib.suppress(OSError):
        for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    return f"{ref} (no commit yet)"
