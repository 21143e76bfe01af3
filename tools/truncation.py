"""Generic output truncation (reference §1.3).

Long output is cut to a preview; the whole text is saved under the user data
dir so the model can grep it or read it in pages instead of losing it.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
RETENTION_SECONDS = 7 * 24 * 3600
CLEANUP_INTERVAL_SECONDS = 3600

_counter = itertools.count()
_last_cleanup = 0.0


def data_dir() -> Path:
    """toolhost's data dir (``TOOLHOST_DATA_DIR`` overrides, for tests and sandboxes)."""
    override = os.environ.get("TOOLHOST_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs  # with tempfile and random: imported only when it is asked

    return Path(platformdirs.user_data_dir("toolhost"))


def output_dir() -> Path:
    return data_dir() / "tool-output"


@dataclass(frozen=True)
class Truncated:
    text: str
    truncated: bool
    output_path: str | None = None


def truncate_output(
    text: str,
    *,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
    direction: Literal["head", "tail"] = "head",
    task_available: bool | Callable[[], bool] = False,
) -> Truncated:
    """Cut ``text`` to the limits; ``task_available`` may be a callable, asked only if cut."""
    lines = text.split("\n")
    total_bytes = len(text.encode("utf-8"))
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return Truncated(text, False)

    kept: list[str] = []
    used = 0
    hit_bytes = False
    ordered = lines if direction == "head" else reversed(lines)
    for line in ordered:
        if len(kept) >= max_lines:
            break
        cost = len(line.encode("utf-8")) + (1 if kept else 0)
        if used + cost > max_bytes:
            hit_bytes = True
            break
        kept.append(line)
        used += cost
    if direction == "tail":
        kept.reverse()
    preview = "\n".join(kept)
    if hit_bytes:
        removed, unit = total_bytes - used, "bytes"
    else:
        removed, unit = len(lines) - len(kept), "lines"

    path = _save_full_text(text)
    hint = f"The tool call succeeded but the output was truncated. Full output saved to: {path}\n"
    if task_available() if callable(task_available) else task_available:
        hint += (
            "Use the Task tool to have explore agent process this file with Grep and Read "
            "(with offset/limit). Do NOT read the full file yourself - delegate to save context."
        )
    else:
        hint += (
            "Use Grep to search the full content or Read with offset/limit to view "
            "specific sections."
        )
    marker = f"...{removed} {unit} truncated..."
    if direction == "head":
        final = f"{preview}\n\n{marker}\n\n{hint}"
    else:
        final = f"{marker}\n\n{hint}\n\n{preview}"
    return Truncated(final, True, str(path))


def truncate_tail(
    text: str, *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES
) -> Truncated:
    """A command's output cut to its last lines, as OpenCode 1.18.33's shell tool cuts it.

    The end of a command's output is where its errors and results are. Whole lines are
    kept from the end within both limits; a last line longer than ``max_bytes`` on its
    own keeps its last ``max_bytes`` bytes (at a character boundary), so a single huge
    line is cut, never dropped. The full text is saved, and the output says where.
    """
    lines = text.split("\n")
    if len(lines) <= max_lines and len(text.encode("utf-8")) <= max_bytes:
        return Truncated(text, False)
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        data = line.encode("utf-8")
        cost = len(data) + (1 if kept else 0)
        if used + cost > max_bytes:
            if not kept:
                kept.append(data[-max_bytes:].decode("utf-8", "ignore"))
            break
        kept.append(line)
        used += cost
    kept.reverse()
    path = _save_full_text(text)
    return Truncated(
        f"...output truncated...\n\nFull output saved to: {path}\n\n" + "\n".join(kept),
        True,
        str(path),
    )


def _save_full_text(text: str) -> Path:
    directory = output_dir()
    directory.mkdir(parents=True, exist_ok=True)
    cleanup_old_outputs()
    # Ascending ids: time in ms, then a per-process counter and the pid for uniqueness.
    name = f"tool_{time.time_ns() // 1_000_000:013d}_{os.getpid()}_{next(_counter):06d}"
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def cleanup_old_outputs(*, force: bool = False) -> int:
    """Delete saved outputs older than 7 days; runs at most hourly unless forced."""
    global _last_cleanup
    now = time.time()
    if not force and now - _last_cleanup < CLEANUP_INTERVAL_SECONDS:
        return 0
    _last_cleanup = now
    removed = 0
    directory = output_dir()
    if not directory.is_dir():
        return 0
    for entry in directory.glob("tool_*"):
        try:
            if now - entry.stat().st_mtime > RETENTION_SECONDS:
                entry.unlink()
                removed += 1
        except OSError:
            continue
    return removed
