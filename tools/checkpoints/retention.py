"""How long a worktree's checkpoints are kept: by age, then by size (``checkpoints`` in
opencode.json), never a session the process serves nor a restore that is running; and
the outside scans' copies that nothing uses any more."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tools.checkpoints import restore
from tools.checkpoints.outside import Baseline
from tools.checkpoints.store import read_json


@dataclass(frozen=True)
class Limits:
    max_age_days: float
    max_bytes: int
    live: frozenset[str]  # sessions the process serves: never pruned


def prune(
    folders: list[Path], limits: Limits, baseline: Baseline, now: float | None = None
) -> list[str]:
    """Remove checkpoints older than ``max_age_days``, then the oldest while the
    folder is over ``max_bytes``; never this process's sessions' nor one whose
    restore is running. Copies of the outside scans no checkpoint uses go too."""
    now = time.time() if now is None else now
    removed = []
    sizes = {f: _size(f) for f in folders}
    total = sum(sizes.values())
    for folder in folders:
        meta = read_json(folder / "meta.json")
        if not isinstance(meta, dict):
            continue
        if meta.get("sessionID") in limits.live or (folder / restore.JOURNAL).exists():
            continue
        old = now - float(meta.get("time", 0)) > limits.max_age_days * 86400
        if old or total > limits.max_bytes:
            shutil.rmtree(folder, ignore_errors=True)
            total -= sizes[folder]
            removed.append(folder.name)
    if removed:
        _collect_copies([f for f in folders if f.name not in removed], baseline)
    return removed


def _collect_copies(folders: list[Path], baseline: Baseline) -> None:
    """Copies of the outside scans that neither the last scan nor a checkpoint uses."""
    used = {entry[4] for entry in (baseline.last or baseline.load()).values() if entry[4]}
    for folder in folders:
        summary = read_json(folder / "summary.json")
        for change in summary.get("outside", []) if isinstance(summary, dict) else []:
            used.add(os.path.basename(change.get("before", {}).get("blob", "")))
    for copy in (baseline.folder / "objects").glob("*/*"):
        if copy.name not in used:
            copy.unlink(missing_ok=True)


def _size(folder: Path) -> int:
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total
