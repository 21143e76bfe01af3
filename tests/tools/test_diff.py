from __future__ import annotations

import difflib
import itertools
import random
from typing import Any

import pytest
import unidiff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.changes.diff import FileDiff, diff_texts, trim_diff
from tools.changes.line_match import line_opcodes, split_lines
from tools.changes.positions import apply_text_edits
from tools.changes.workspace_edit import create_file_edit, delete_file_edit, workspace_edit

# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def apply_opcodes(a: list[str], b: list[str], codes: list[tuple[str, int, int, int, int]]) -> list:
    out: list[str] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        assert (i1, j1) == (i, j), "opcodes must be contiguous"
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            out.extend(a[i1:i2])
        else:
            assert tag in ("replace", "delete", "insert")
            assert (i2 > i1) == (tag != "insert")
            assert (j2 > j1) == (tag != "delete")
            out.extend(b[j1:j2])
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return out


def assert_coalesced(codes: list[tuple[str, int, int, int, int]]) -> None:
    for prev, cur in itertools.pairwise(codes):
        assert not (prev[0] == "equal" and cur[0] == "equal")
        # two adjacent change blocks would be one replace in difflib's output
        assert prev[0] == "equal" or cur[0] == "equal"


def apply_patch(old: str, unified: str) -> str:
    """Tiny hunk applier over unidiff's parse; checks context and removals."""
    patch = unidiff.PatchSet(unified)
    if not patch:
        return old
    assert len(patch) == 1
    old_lines = split_lines(old)
    out: list[str] = []
    cursor = 0
    for hunk in patch[0]:
        body: list[tuple[str, str]] = []
        for line in hunk:
            if line.line_type == "\\":
                tag, value = body[-1]
                assert value.endswith("\n")
                body[-1] = (tag, value[:-1])
            else:
                body.append((line.line_type, line.value))
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        assert start >= cursor
        out.extend(old_lines[cursor:start])
        cursor = start
        for tag, value in body:
            if tag in (" ", "-"):
                assert old_lines[cursor] == value
                cursor += 1
            if tag in (" ", "+"):
                out.append(value)
    out.extend(old_lines[cursor:])
    return "".join(out)


def hunk_text(unified: str) -> str:
    return unified[unified.index("@@") :]


def difflib_hunks(old: str, new: str, n: int = 3) -> str:
    lines = list(difflib.unified_diff(split_lines(old), split_lines(new), n=n))
    return "".join(lines[2:])


def pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def edit(sl: int, sc: int, el: int, ec: int, text: str) -> dict[str, Any]:
    return {"range": {"start": pos(sl, sc), "end": pos(el, ec)}, "newText": text}


# --------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------

# Few distinct lines force duplicates (no unique anchors, difflib fallback);
# the odd ones exercise CRLF, a bare CR (LSP line break), astral chars
# (UTF-16 surrogates) and leading "-"/"+" that look like diff syntax.
LINE = st.sampled_from(
    ["a", "b", "c", "", "  a", "\tb", "x\r", "é", "😀z", "a\rb", "--x", "++ y", "\\ q"]
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(LINE, max_size=25))
    body = "\n".join(lines)
    if lines and draw(st.booleans()):
        body += "\n"
    return body


@st.composite
def text_pairs(draw: st.DrawFn) -> tuple[str, str]:
    old = draw(texts())
    if draw(st.booleans()):
        return old, draw(texts())
    # Mostly-shared pair: small mutations of old, which is what edits look like.
    lines = split_lines(old)
    for _ in range(draw(st.integers(0, 4))):
        k = draw(st.integers(0, len(lines)))
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        new_line = draw(LINE) + "\n"
        if op == "ins" or not lines or k == len(lines):
            lines.insert(k, new_line)
        elif op == "del":
            del lines[k]
        else:
            lines[k] = new_line
    new = "".join(lines)
    if draw(st.booleans()):
        new = new.removesuffix("\n")
    return old, new


PROPS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(text_pairs())
def test_opcodes_reconstruct_new(pair: tuple[str, str]) -> None:
    old, new = pair
    a, b = split_lines(old), split_lines(new)
    codes = line_opcodes(a, b)
    assert "".join(apply_opcodes(a, b, codes)) == new
    assert_coalesced(codes)


@PROPS
@given(text_pairs(), st.sampled_from(["utf-16", "utf-8", "utf-32"]))
def test_text_edits_reconstruct_new(pair: tuple[str, str], encoding: Any) -> None:
    old, new = pair
    d = diff_texts(old, new, "f.txt", position_encoding=encoding)
    assert apply_text_edits(old, d.edits, position_encoding=encoding) == new
    # Reverse application one by one (what an editor does) must agree too.
    text = old
    for e in reversed(d.edits):
        text = apply_text_edits(text, [e], position_encoding=encoding)
    assert text == new


@PROPS
@given(text_pairs(), st.integers(0, 4))
def test_unified_parses_and_applies(pair: tuple[str, str], context: int) -> None:
    old, new = pair
    d = diff_texts(old, new, "dir/f.txt", context=context)
    if old == new:
        assert d == FileDiff("dir/f.txt", "", 0, 0, [])
        return
    patch = unidiff.PatchSet(d.unified)
    assert len(patch) == 1
    assert patch[0].added == d.additions
    assert patch[0].removed == d.deletions
    assert patch[0].source_file == "a/dir/f.txt"
    assert patch[0].target_file == "b/dir/f.txt"
    assert apply_patch(old, d.unified) == new


@PROPS
@given(texts())
def test_create_and_delete_round_trip(text: str) -> None:
    created = diff_texts("", text, "n.txt", old_exists=False)
    assert created.additions == len(split_lines(text))
    assert created.deletions == 0
    assert apply_text_edits("", created.edits) == text
    assert created.unified.startswith("diff --git a/n.txt b/n.txt\nnew file mode 100644\n")
    if text:
        patch = unidiff.PatchSet(created.unified)
        assert patch[0].is_added_file
        assert apply_patch("", created.unified) == text

    deleted = diff_texts(text, "", "n.txt", new_exists=False)
    assert deleted.deletions == len(split_lines(text))
    assert apply_text_edits(text, deleted.edits) == ""
    if text:
        patch = unidiff.PatchSet(deleted.unified)
        assert patch[0].is_removed_file
        assert apply_patch(text, deleted.unified) == ""


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 5),
    st.integers(0, 5),
    st.booleans(),
    st.integers(0, 4),
)
def test_single_change_matches_difflib(
    n: int, start: int, removed: int, added: int, eol: bool, context: int
) -> None:
    # Unique lines make any single change unambiguous, so hunk text must be
    # byte-identical to difflib's (which follows GNU diff).
    start = min(start, n)
    removed = min(removed, n - start)
    old_lines = [f"line {i}\n" for i in range(n)]
    new_lines = [*old_lines[:start], *(f"new {k}\n" for k in range(added))]
    new_lines += old_lines[start + removed :]
    old, new = "".join(old_lines), "".join(new_lines)
    if old == new:
        return
    d = diff_texts(old, new, "p.py", context=context)
    assert hunk_text(d.unified) == difflib_hunks(old, new, n=context)
    assert (d.additions, d.deletions) == (added, removed)


# --------------------------------------------------------------------------
# line_opcodes
# --------------------------------------------------------------------------


def test_opcodes_empty_and_identical() -> None:
    assert line_opcodes([], []) == []
    assert line_opcodes(["a\n"], ["a\n"]) == [("equal", 0, 1, 0, 1)]
    assert line_opcodes([], ["a\n"]) == [("insert", 0, 0, 0, 1)]
    assert line_opcodes(["a\n"], []) == [("delete", 0, 1, 0, 0)]


def test_opcodes_moved_block_keeps_longest_run() -> None:
    old = [f"{i}\n" for i in range(100)]
    new = old[50:60] + old[:50] + old[60:]
    codes = line_opcodes(old, new)
    assert apply_opcodes(old, new, codes) == new
    changed = [c for c in codes if c[0] != "equal"]
    assert sum(i2 - i1 for _, i1, i2, _, _ in changed) == 10
    assert sum(j2 - j1 for _, _, _, j1, j2 in changed) == 10


def test_opcodes_huge_anchor_free_gap_is_one_replace() -> None:
    rng = random.Random(7)
    # No line is unique on either side and the gap exceeds the difflib bound.
    old = [rng.choice("xyz") + "\n" for _ in range(3000)]
    new = [rng.choice("xyz") + "\n" for _ in range(3000)]
    old[0] = new[0] = "head\n"
    codes = line_opcodes(old, new)
    assert apply_opcodes(old, new, codes) == new
    assert codes[0] == ("equal", 0, 1, 0, 1)


def test_opcodes_many_midsize_gaps_stay_correct() -> None:
    # Enough anchor-free gaps to exhaust the difflib budget: still correct.
    rng = random.Random(3)
    old: list[str] = []
    new: list[str] = []
    for k in range(12):
        old.append(f"anchor {k}\n")
        new.append(f"anchor {k}\n")
        old.extend(rng.choice("pq") + "\n" for _ in range(900))
        new.extend(rng.choice("pq") + "\n" for _ in range(900))
    codes = line_opcodes(old, new)
    assert apply_opcodes(old, new, codes) == new


# --------------------------------------------------------------------------
# unified format
# --------------------------------------------------------------------------


def test_no_change() -> None:
    assert diff_texts("a\nb\n", "a\nb\n", "x") == FileDiff("x", "", 0, 0, [])
    assert diff_texts("", "", "x") == FileDiff("x", "", 0, 0, [])


def test_modify_headers_and_hunk() -> None:
    d = diff_texts("a\nb\nc\n", "a\nB\nc\n", "src/m.py")
    assert d.unified == (
        "diff --git a/src/m.py b/src/m.py\n"
        "--- a/src/m.py\n"
        "+++ b/src/m.py\n"
        "@@ -1,3 +1,3 @@\n"
        " a\n"
        "-b\n"
        "+B\n"
        " c\n"
    )
    assert (d.additions, d.deletions) == (1, 1)
    assert d.edits == [edit(1, 0, 2, 0, "B\n")]


def test_new_file() -> None:
    d = diff_texts("", "x\ny\n", "new.txt", old_exists=False)
    assert d.unified == (
        "diff --git a/new.txt b/new.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/new.txt\n"
        "@@ -0,0 +1,2 @@\n"
        "+x\n"
        "+y\n"
    )
    assert (d.additions, d.deletions) == (2, 0)
    assert d.edits == [edit(0, 0, 0, 0, "x\ny\n")]


def test_new_empty_file_is_header_only() -> None:
    d = diff_texts("", "", "e.txt", old_exists=False)
    assert d.unified == "diff --git a/e.txt b/e.txt\nnew file mode 100644\n"
    assert (d.additions, d.deletions, d.edits) == (0, 0, [])


def test_deleted_file() -> None:
    d = diff_texts("x\ny", "", "gone.txt", new_exists=False)
    assert d.unified == (
        "diff --git a/gone.txt b/gone.txt\n"
        "deleted file mode 100644\n"
        "--- a/gone.txt\n"
        "+++ /dev/null\n"
        "@@ -1,2 +0,0 @@\n"
        "-x\n"
        "-y\n"
        "\\ No newline at end of file\n"
    )
    assert (d.additions, d.deletions) == (0, 2)
    assert d.edits == [edit(0, 0, 1, 1, "")]


def test_invalid_exists_combinations() -> None:
    with pytest.raises(ValueError):
        diff_texts("", "", "x", old_exists=False, new_exists=False)
    with pytest.raises(ValueError):
        diff_texts("a", "b", "x", old_exists=False)
    with pytest.raises(ValueError):
        diff_texts("a", "b", "x", new_exists=False)
    with pytest.raises(ValueError):
        diff_texts("a", "b", "x", context=-1)


def test_empty_old_modified_file() -> None:
    d = diff_texts("", "hi\n", "f")
    assert hunk_text(d.unified) == "@@ -0,0 +1 @@\n+hi\n"
    assert "new file mode" not in d.unified
    d = diff_texts("hi\n", "", "f")
    assert hunk_text(d.unified) == "@@ -1 +0,0 @@\n-hi\n"
    assert d.edits == [edit(0, 0, 1, 0, "")]


def test_no_newline_marker_both_sides() -> None:
    d = diff_texts("a\nb", "a\nc", "f")
    assert hunk_text(d.unified) == (
        "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    # The range ends at the end of the last line, and no newline is invented.
    assert d.edits == [edit(1, 0, 1, 1, "c")]


def test_adding_final_newline() -> None:
    d = diff_texts("a\nb", "a\nb\n", "f")
    assert hunk_text(d.unified) == "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    assert (d.additions, d.deletions) == (1, 1)
    assert apply_text_edits("a\nb", d.edits) == "a\nb\n"


def test_removing_final_newline() -> None:
    d = diff_texts("a\nb\n", "a\nb", "f")
    assert hunk_text(d.unified) == "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
    assert d.edits == [edit(1, 0, 2, 0, "b")]


def test_unchanged_last_line_without_newline_is_marked_context() -> None:
    d = diff_texts("a\nb\nc", "A\nb\nc", "f")
    assert hunk_text(d.unified) == (
        "@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n\\ No newline at end of file\n"
    )


def test_crlf_lines_keep_their_cr() -> None:
    old, new = "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"
    d = diff_texts(old, new, "w.bat")
    assert hunk_text(d.unified) == "@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n"
    assert d.edits == [edit(1, 0, 2, 0, "B\r\n")]
    assert apply_text_edits(old, d.edits) == new


def test_hunks_merge_when_context_overlaps() -> None:
    old_lines = [f"{i}\n" for i in range(30)]
    for gap in (5, 6, 7, 8):
        new_lines = list(old_lines)
        new_lines[5] = "X\n"
        new_lines[5 + gap] = "Y\n"
        old, new = "".join(old_lines), "".join(new_lines)
        d = diff_texts(old, new, "f")
        assert hunk_text(d.unified) == difflib_hunks(old, new)
        # equal runs of <= 2*context lines keep the hunks together
        assert d.unified.count("@@ -") == (1 if gap - 1 <= 6 else 2)


def test_context_zero() -> None:
    d = diff_texts("a\nb\nc\n", "a\nc\nd\n", "f", context=0)
    assert hunk_text(d.unified) == "@@ -2 +1,0 @@\n-b\n@@ -3,0 +3 @@\n+d\n"
    assert apply_patch("a\nb\nc\n", d.unified) == "a\nc\nd\n"


def test_marker_like_content_round_trips() -> None:
    old = "--- a\n+++ b\n@@ x @@\n\\ no\n"
    new = "--- a\n+++ c\n@@ x @@\n\\ no\n"
    d = diff_texts(old, new, "f")
    assert apply_patch(old, d.unified) == new


# --------------------------------------------------------------------------
# LSP edits
# --------------------------------------------------------------------------


def test_edit_positions_utf16_on_last_line() -> None:
    old, new = "x\n😀é", "x\nz"
    d = diff_texts(old, new, "f")
    assert d.edits == [edit(1, 0, 1, 3, "z")]  # 😀 is two UTF-16 units
    assert diff_texts(old, new, "f", position_encoding="utf-8").edits == [edit(1, 0, 1, 6, "z")]
    assert diff_texts(old, new, "f", position_encoding="utf-32").edits == [edit(1, 0, 1, 2, "z")]


def test_edit_positions_follow_lsp_lines_with_bare_cr() -> None:
    # A bare \r ends an LSP line, so "\n"-line 1 is LSP line 2 here.
    old, new = "a\rb\nc\n", "a\rb\nC\n"
    d = diff_texts(old, new, "f")
    assert d.edits == [edit(2, 0, 3, 0, "C\n")]
    assert apply_text_edits(old, d.edits) == new


def test_apply_text_edits_semantics() -> None:
    text = "ab\r\ncd\n😀x\n"
    # clamp character past line end (before the CRLF) and line past EOF
    assert apply_text_edits(text, [edit(0, 99, 0, 99, "!")]) == "ab!\r\ncd\n😀x\n"
    assert apply_text_edits(text, [edit(9, 0, 9, 0, "END")]) == text + "END"
    # UTF-16: character 2 is after the surrogate pair
    assert apply_text_edits(text, [edit(2, 2, 2, 3, "y")]) == "ab\r\ncd\n😀y\n"
    # same-position inserts apply in array order
    assert apply_text_edits("", [edit(0, 0, 0, 0, "1"), edit(0, 0, 0, 0, "2")]) == "12"
    assert apply_text_edits(text, []) == text
    with pytest.raises(ValueError, match="overlapping"):
        apply_text_edits(text, [edit(0, 0, 1, 1, ""), edit(0, 1, 0, 2, "")])
    with pytest.raises(ValueError):
        apply_text_edits(text, [edit(1, 0, 0, 0, "")])


def test_workspace_edit_shapes() -> None:
    edits = [edit(0, 0, 0, 0, "x")]
    assert workspace_edit("file:///w/a.py", edits, 3) == {
        "documentChanges": [
            {"textDocument": {"uri": "file:///w/a.py", "version": 3}, "edits": edits}
        ]
    }
    assert workspace_edit("file:///w/a.py", [])["documentChanges"][0]["textDocument"] == {
        "uri": "file:///w/a.py",
        "version": None,
    }
    assert create_file_edit("file:///w/n.py", "hi\n") == {
        "documentChanges": [
            {
                "kind": "create",
                "uri": "file:///w/n.py",
                "options": {"overwrite": False, "ignoreIfExists": True},
            },
            {
                "textDocument": {"uri": "file:///w/n.py", "version": None},
                "edits": [edit(0, 0, 0, 0, "hi\n")],
            },
        ]
    }
    assert delete_file_edit("file:///w/n.py") == {
        "documentChanges": [{"kind": "delete", "uri": "file:///w/n.py"}]
    }


# --------------------------------------------------------------------------
# trim_diff
# --------------------------------------------------------------------------


def test_trim_diff_strips_common_indent() -> None:
    unified = (
        "diff --git a/f b/f\n"
        "--- a/f\n"
        "+++ b/f\n"
        "@@ -1,3 +1,3 @@\n"
        "     def f():\n"
        "-        return 1\n"
        "+        return 2\n"
        " \n"
    )
    assert trim_diff(unified) == (
        "diff --git a/f b/f\n"
        "--- a/f\n"
        "+++ b/f\n"
        "@@ -1,3 +1,3 @@\n"
        " def f():\n"
        "-    return 1\n"
        "+    return 2\n"
        " \n"
    )


def test_trim_diff_is_noop_without_common_indent() -> None:
    unified = diff_texts("a\n  b\n", "a\n  c\n", "f").unified
    assert trim_diff(unified) == unified
    assert trim_diff("") == ""
    assert trim_diff("no diff here") == "no diff here"


def test_trim_diff_tabs_and_blank_lines() -> None:
    # blank/whitespace-only lines don't lower the minimum
    unified = "@@ -1,3 +1,3 @@\n-\t\tx\n+\t\ty\n \t\n"
    assert trim_diff(unified) == "@@ -1,3 +1,3 @@\n-x\n+y\n \n"


def test_trim_diff_treats_dashed_body_lines_as_content() -> None:
    # A removed SQL comment line renders as "---"; inside a hunk it is content.
    unified = diff_texts("  -- a\n  b\n", "  b\n", "q.sql").unified
    assert trim_diff(unified).endswith("@@ -1,2 +1 @@\n--- a\n b\n")
    assert trim_diff(unified).startswith("diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n")


# --------------------------------------------------------------------------
# scale
# --------------------------------------------------------------------------


def _big_file() -> tuple[str, str, int]:
    rng = random.Random(1234)
    lines = []
    for i in range(100_000):
        r = i % 10
        if r == 0:
            lines.append("\n")  # duplicates everywhere, like real code
        elif r == 9:
            lines.append("    }\n")
        else:
            lines.append(f"    value_{i} = compute(x, {i % 97})\n")
    new = list(lines)
    # One single-line change in each of 2000 disjoint 50-line windows.
    for w in range(2000):
        k = w * 50 + rng.randrange(1, 49)
        new[k] = f"    changed_{k} = other({k})\n"
    return "".join(lines), "".join(new), 2000


def test_large_file_scattered_changes() -> None:
    old, new, changes = _big_file()
    d = diff_texts(old, new, "big.py")
    assert d.additions == d.deletions == changes
    assert len(d.edits) == changes
    assert apply_text_edits(old, d.edits) == new
    a, b = split_lines(old), split_lines(new)
    assert "".join(apply_opcodes(a, b, line_opcodes(a, b))) == new
