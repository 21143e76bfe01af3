"""LSP edits as plain dicts: a line diff's TextEdits, and the WorkspaceEdits that carry them.

``text_edits`` turns a line diff's opcodes into TextEdits against the old text;
``workspace_edit``, ``create_file_edit`` and ``delete_file_edit`` wrap a file's
change into the ``documentChanges`` an editor's ``workspace/applyEdit`` takes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from tools.changes.line_match import Opcode
from tools.changes.positions import PositionEncoding, has_lone_cr, lsp_line_starts, position_units

__all__ = ["create_file_edit", "delete_file_edit", "text_edits", "workspace_edit"]


def _position(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def _range(start: dict[str, int], end: dict[str, int]) -> dict[str, Any]:
    return {"start": start, "end": end}


def text_edits(
    old: str,
    old_lines: Sequence[str],
    new_lines: Sequence[str],
    codes: list[Opcode],
    encoding: PositionEncoding,
    lead: int = 0,
    at_end: bool = True,
) -> list[dict[str, Any]]:
    """LSP edits; ``old_lines`` are lines ``lead``.. of ``old`` (its end when ``at_end``)."""
    n = len(old_lines)
    partial_last = at_end and bool(old_lines) and not old_lines[-1].endswith("\n")
    lone_cr = has_lone_cr(old)  # then lead == 0

    if lone_cr:
        # Rare (classic-Mac line endings): map "\n"-line offsets through the
        # LSP line table so the client's notion of lines is honoured.
        line_offsets = [0, *accumulate(len(line) for line in old_lines)]
        starts = lsp_line_starts(old)

        def pos(i: int) -> dict[str, int]:
            offset = line_offsets[i]
            ln = bisect_right(starts, offset) - 1
            return _position(ln, position_units(old[starts[ln] : offset], encoding))

    else:
        last = lead + n - 1
        eof = _position(last, position_units(old_lines[-1], encoding)) if partial_last else None

        def pos(i: int) -> dict[str, int]:
            if eof is not None and i == n:
                return eof
            return _position(lead + i, 0)

    edits: list[dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            continue
        edits.append({"range": _range(pos(i1), pos(i2)), "newText": "".join(new_lines[j1:j2])})
    return edits


def workspace_edit(
    uri: str, edits: list[dict[str, Any]], version: int | None = None
) -> dict[str, Any]:
    return {"documentChanges": [{"textDocument": {"uri": uri, "version": version}, "edits": edits}]}


def create_file_edit(uri: str, text: str) -> dict[str, Any]:
    # ignoreIfExists keeps a racing creation from failing the whole edit;
    # the caller is expected to use a plain text edit for existing files.
    insert = {"range": _range(_position(0, 0), _position(0, 0)), "newText": text}
    return {
        "documentChanges": [
            {
                "kind": "create",
                "uri": uri,
                "options": {"overwrite": False, "ignoreIfExists": True},
            },
            {"textDocument": {"uri": uri, "version": None}, "edits": [insert]},
        ]
    }


def delete_file_edit(uri: str) -> dict[str, Any]:
    return {"documentChanges": [{"kind": "delete", "uri": uri}]}
