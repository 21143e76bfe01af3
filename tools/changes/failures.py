"""What the model is told when a change could not be written, and what the files hold then.

Every message says what happened, whether anything was changed, and what to do next.
A single-file change (edit, write, multiedit) and a patch (apply_patch) are worded
apart: a patch names the files it put back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.changes.transaction import TransactionFailed
from tools.editor import EditorRefusal
from tools.fsio.paths import relative

# A refused edit shows the file around it: this many lines either side, this many at most.
CONTEXT_LINES = 3
MAX_SHOWN_LINES = 40

PATCH_HEAD = "Failed to apply the patch"


def unencodable(error: UnicodeEncodeError, encoding: str) -> str:
    """The end of an "is encoded as ..." error: which character, and what to do."""
    bad = error.object[error.start : error.end]
    return (
        f"{encoding}, which cannot represent {bad!r} (U+{ord(bad[0]):04X}) in the new text. "
        f"Nothing was written. Use only characters that {encoding} can encode."
    )


def write_failed(path: Path, reason: str) -> str:
    return f"Could not write {path}: {reason}. The file was not changed."


def refused(path: Path, edits: list[dict[str, Any]], refusal: EditorRefusal) -> str:
    """The editor would not take the edit: why, and the file as it is now around the edit."""
    lines = refusal.current_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    head = f"The edit to {path} was not applied: {refusal.reason}. Nothing was written."
    if not lines:
        return f"{head} The file is now empty. Make the edit again against it."
    first = min((e["range"]["start"]["line"] for e in edits), default=0)
    last = max((_last_line(e["range"]) for e in edits), default=0)
    start = max(0, min(first, len(lines) - 1) - CONTEXT_LINES)
    end = min(len(lines), last + 1 + CONTEXT_LINES, start + MAX_SHOWN_LINES)
    numbered = "\n".join(f"{n + 1}: {lines[n]}" for n in range(start, end))
    return (
        f"{head} Around the edit, the file now reads (lines {start + 1}-{end} of "
        f"{len(lines)}):\n<content>\n{numbered}\n</content>\nMake the edit again against this "
        "content (read the file first if you need more of it)."
    )


def _last_line(range_: dict[str, Any]) -> int:
    """The last line a range touches (an end at the start of a line stops before it)."""
    start: int = range_["start"]["line"]
    end: int = range_["end"]["line"]
    return end - 1 if end > start and range_["end"]["character"] == 0 else end


def patch_transaction_failed(error: TransactionFailed, worktree: Path) -> str:
    head = f"{PATCH_HEAD}: {error}."
    if error.unrestored:
        stuck = ", ".join(f"{relative(p, worktree)} ({why})" for p, why in error.unrestored)
        return (
            f"{head} The patch was not applied, but these files could not be restored and may "
            f"be partly changed: {stuck}. Read them before continuing."
        )
    if error.restored:
        names = ", ".join(relative(p, worktree) for p in error.restored)
        undone = f" The files already changed were restored ({names}), so no file was changed."
    else:
        undone = " No file was changed."
    return f"{head}{undone} Fix the cause and send the whole patch again."


def patch_editor_failed(
    reason: str,
    worktree: Path,
    changed: list[Path],
    left: list[tuple[Path, str]],
) -> str:
    """An open file's change failed: every file was put back, but for ``left`` (with why)."""
    head = f"{PATCH_HEAD}: {reason}"
    if left:
        names = ", ".join(f"{relative(p, worktree)} ({why})" for p, why in left)
        return (
            f"{head}\n\nThe patch was not applied, but these files could not be put back and "
            f"may be partly changed: {names}. Read them before continuing."
        )
    put_back = list(dict.fromkeys(relative(p, worktree) for p in changed))
    undone = (
        f"The files already changed were put back ({', '.join(put_back)}), so no file was changed."
        if put_back
        else "No file was changed."
    )
    return f"{head}\n\n{undone} Fix the cause and send the whole patch again."
