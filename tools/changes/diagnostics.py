"""Which errors a change introduced, and how the model is told about them (reference §5).

Pure: the editor bridge fetches LSP diagnostics (plain dicts) before and after a
change; this module keeps the errors that are new and words them for the model.

A change moves lines, so "new" cannot be decided by range: an error is new when
the after-set holds more errors with its (message, source, code) than the
baseline did.  Only errors (severity 1, or none) are reported, at most
``MAX_PER_FILE`` per file, and for ``write`` at most ``MAX_OTHER_FILES`` other
files.  The sentence before the blocks says the change *was* applied, so a model
reads the errors as the next step rather than as a failure of the edit.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("toolhost.diagnostics")

Diagnostic = dict[str, Any]
ByFile = Mapping[Path, list[Diagnostic]]

MAX_PER_FILE = 20
MAX_OTHER_FILES = 5
SEVERITY = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "HINT"}
ERROR = 1

FIX_NEXT = "fix them next"


# --- reading what the editor sent ------------------------------------------------------------


def valid(diagnostic: Any) -> bool:
    """An LSP Diagnostic with what formatting needs: a message and a start position."""
    if not isinstance(diagnostic, dict) or not isinstance(diagnostic.get("message"), str):
        return False
    try:
        start = diagnostic["range"]["start"]
        return _is_int(start["line"]) and _is_int(start["character"])
    except (KeyError, TypeError):
        return False


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def clean(diagnostics: Any) -> list[Diagnostic]:
    """The well-formed diagnostics of a list the editor sent; the rest are logged and dropped."""
    if not isinstance(diagnostics, list):
        return []
    kept = [d for d in diagnostics if valid(d)]
    if len(kept) != len(diagnostics):
        log.warning("dropped %d malformed diagnostics", len(diagnostics) - len(kept))
    return kept


# --- new versus baseline -------------------------------------------------------------------


def is_error(diagnostic: Diagnostic) -> bool:
    return diagnostic.get("severity", ERROR) in (ERROR, None)


def identity(diagnostic: Diagnostic) -> tuple[str, str, str]:
    """What an error is, wherever it moved: message, source and code."""
    code = diagnostic.get("code")
    return (
        str(diagnostic.get("message", "")),
        str(diagnostic.get("source") or ""),
        "" if code is None else str(code),
    )


def introduced(before: Iterable[Diagnostic], after: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The errors of ``after`` that ``before`` did not have (a multiset difference)."""
    remaining = Counter(identity(d) for d in before if is_error(d))
    new: list[Diagnostic] = []
    for diagnostic in unique(d for d in after if is_error(d)):
        key = identity(diagnostic)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            new.append(diagnostic)
    return new


def unique(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Drop repeats of the same message at the same range (two servers, one error)."""
    seen: set[tuple[str, str]] = set()
    kept: list[Diagnostic] = []
    for diagnostic in diagnostics:
        key = (repr(diagnostic.get("range")), str(diagnostic.get("message")))
        if key not in seen:
            seen.add(key)
            kept.append(diagnostic)
    return kept


def introduced_by_file(baseline: ByFile, current: ByFile) -> dict[Path, list[Diagnostic]]:
    """Per file, the errors the change introduced; files without any are left out."""
    new: dict[Path, list[Diagnostic]] = {}
    for path, after in current.items():
        errors = introduced(baseline.get(path, []), after)
        if errors:
            new[path] = errors
    return new


# --- wording ---------------------------------------------------------------------------------


def format_diagnostic(diagnostic: Diagnostic) -> str:
    """``ERROR [line:col] message``, 1-based."""
    start = diagnostic["range"]["start"]
    severity = SEVERITY.get(diagnostic.get("severity") or ERROR, "ERROR")
    return f"{severity} [{start['line'] + 1}:{start['character'] + 1}] {diagnostic['message']}"


def block(path: Path, diagnostics: list[Diagnostic]) -> str:
    """One file's errors in the reference's ``<diagnostics>`` block; "" when it has none."""
    errors = unique(d for d in diagnostics if is_error(d))
    if not errors:
        return ""
    lines = [format_diagnostic(d) for d in errors[:MAX_PER_FILE]]
    if len(errors) > MAX_PER_FILE:
        lines.append(f"... and {len(errors) - MAX_PER_FILE} more")
    body = "\n".join(lines)
    return f'<diagnostics file="{path}">\n{body}\n</diagnostics>'


def edit_notice(path: Path, new: ByFile, *, done: str = "The edit was applied.") -> str:
    """What edit and multiedit append: the edited file's new errors, if any."""
    text = block(path, new.get(path, []))
    if not text:
        return ""
    return (
        f"\n\n{done} The language server now reports these new errors in this file; "
        f"{FIX_NEXT}:\n{text}"
    )


def write_notice(path: Path, new: ByFile) -> str:
    """What write appends: the written file's new errors, then up to 5 other files'."""
    notice = edit_notice(path, new, done="The file was written.")
    others = [block(p, errors) for p, errors in new.items() if p != path]
    others = [text for text in others if text][:MAX_OTHER_FILES]
    if others:
        intro = "The file was written. " if not notice else ""
        notice += (
            f"\n\n{intro}The change also introduced errors in other files; {FIX_NEXT}:\n"
            + "\n".join(others)
        )
    return notice


def patch_notice(paths: Iterable[Path], new: ByFile) -> str:
    """What apply_patch appends: the new errors of each file it added, updated or moved."""
    blocks = [block(p, new.get(p, [])) for p in dict.fromkeys(paths)]
    blocks = [text for text in blocks if text]
    if not blocks:
        return ""
    return (
        "\n\nThe patch was applied. The language server now reports new errors in these "
        f"files; {FIX_NEXT}:\n" + "\n".join(blocks)
    )


def to_metadata(new: ByFile) -> dict[str, list[Diagnostic]]:
    """``metadata.diagnostics``: ``{uri: Diagnostic[]}`` of the new errors only."""
    return {path.as_uri(): list(errors) for path, errors in new.items() if errors}
