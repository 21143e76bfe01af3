"""Tests for the edit tool's fuzzy match chain (tools/replacers.py)."""

from __future__ import annotations

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from tools.changes import replacers
from tools.changes.replacers import (
    AMBIGUOUS,
    IDENTICAL,
    NOT_FOUND,
    _indentation_flexible,
    _Lines,
    _multi_occurrence,
    find_match,
    levenshtein,
    locate,
    replace,
    splice,
)
from tools.errors import ToolError


def fired(content: str, old: str, replace_all: bool = False) -> str:
    """The name of the replacer that produced the match."""
    return locate(content, old, replace_all).replacer


def error_of(content: str, old: str, new: str = "NEW", replace_all: bool = False) -> ToolError:
    with pytest.raises(ToolError) as info:
        replace(content, old, new, replace_all)
    assert info.value.kind == "failed"
    return info.value


# --- one test per replacer --------------------------------------------------------------------


def test_simple_exact_match() -> None:
    content = "a = 1\nb = 2\nc = 3\n"
    assert fired(content, "b = 2") == "simple"
    assert replace(content, "b = 2", "b = 20") == "a = 1\nb = 20\nc = 3\n"
    assert find_match(content, "b = 2") == [(6, 11)]


def test_line_trimmed_tolerates_indentation_and_trailing_spaces() -> None:
    content = "def f():\n    x = 1   \n    return x\n"
    old = "x = 1\nreturn x"
    assert fired(content, old) == "line_trimmed"
    # The original lines' exact span is replaced, indentation and all.
    assert replace(content, old, "    return 1") == "def f():\n    return 1\n"


def test_line_trimmed_ignores_trailing_newline_in_old() -> None:
    content = "  one\n  two\nthree"
    assert fired(content, "one\ntwo\n") == "line_trimmed"
    assert replace(content, "one\ntwo\n", "X") == "X\nthree"


def test_block_anchor_single_candidate_trusts_anchors() -> None:
    content = "begin\nfoo()\nbar()\nend\ntail\n"
    old = "begin\nsomething entirely different\nend"
    assert fired(content, old) == "block_anchor"
    assert replace(content, old, "NEW") == "NEW\ntail\n"


def test_block_anchor_picks_most_similar_candidate() -> None:
    content = "if ready:\n    launch(rocket)\nend\nif ready:\n    launch(probe)\nend\n"
    old = "if ready:\n    launch(probes)\nend"
    assert fired(content, old) == "block_anchor"
    assert replace(content, old, "NEW") == "if ready:\n    launch(rocket)\nend\nNEW\n"


def test_block_anchor_rejects_dissimilar_candidates() -> None:
    content = "if ready:\n    launch(rocket)\nend\nif ready:\n    launch(probe)\nend\n"
    old = "if ready:\n    zzzzzzzzzzzzzzzzzzzz\nend"
    assert error_of(content, old).message == NOT_FOUND


def test_block_anchor_needs_three_lines() -> None:
    # Two lines plus a trailing newline is still a two-line block: anchors alone
    # must not swallow whatever lies between them.
    content = "start\nmiddle\nfinish\n"
    assert error_of(content, "start\nfinish\n").message == NOT_FOUND


def test_whitespace_normalized_whole_line() -> None:
    content = "x = 1\ny = 2\n"
    assert fired(content, "x  =   1") == "whitespace_normalized"
    assert replace(content, "x  =   1", "x = 10") == "x = 10\ny = 2\n"


def test_whitespace_normalized_inside_a_line() -> None:
    content = "total = foo(a, b) + c\n"
    assert fired(content, "foo(a,  b)") == "whitespace_normalized"
    assert replace(content, "foo(a,  b)", "bar()") == "total = bar() + c\n"


def test_whitespace_normalized_multiline_window() -> None:
    content = "if  x:\n    return 1\nelse: pass\n"
    old = "if x:\n  return   1"
    assert fired(content, old) == "whitespace_normalized"
    assert replace(content, old, "NEW") == "NEW\nelse: pass\n"


def test_indentation_flexible_candidates() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    old = "def f(self):\n    return 1"
    candidates = list(_indentation_flexible(_Lines(content), old))
    assert candidates == ["    def f(self):\n        return 1"]
    # Blocks equal after dedent are also equal line-by-line when trimmed and after
    # whitespace normalisation, so in the chain an earlier replacer always gets
    # there first (as in OpenCode); the replacer is kept for fidelity.
    assert fired(content, old) == "line_trimmed"


def test_indentation_flexible_rejects_different_relative_indent() -> None:
    content = "    def f(self):\n    return 1\n"
    assert list(_indentation_flexible(_Lines(content), "def f(self):\n    return 1")) == []


def test_escape_normalized_direct() -> None:
    content = 'msg = "hello"\nprint(msg)\n'
    old = 'msg = \\"hello\\"'
    assert fired(content, old) == "escape_normalized"
    assert replace(content, old, 'msg = "bye"') == 'msg = "bye"\nprint(msg)\n'


def test_escape_normalized_newline_escape() -> None:
    content = "first\nsecond\nthird\n"
    old = "first\\nsecond"
    assert fired(content, old) == "escape_normalized"
    assert replace(content, old, "1st\n2nd") == "1st\n2nd\nthird\n"


def test_escape_normalized_escaped_file_text() -> None:
    # The file itself holds escaped text; the model wrote it unescaped.
    content = 'run "echo \\"hi\\""\nnext\n'
    old = 'run "echo "hi""'
    assert fired(content, old) == "escape_normalized"
    assert replace(content, old, "run x") == "run x\nnext\n"


def test_trimmed_boundary() -> None:
    content = "x = 1; y = 2\nz = 3; w = 4\n"
    old = "  y = 2\nz = 3  "
    assert fired(content, old) == "trimmed_boundary"
    assert replace(content, old, "Y\nZ") == "x = 1; Y\nZ; w = 4\n"


def test_context_aware() -> None:
    # Two identical blocks that BlockAnchor prefers (ambiguous, so skipped) and
    # one same-length block where half the middle lines match.
    twin = "start\nalpha one\nbeta two\nextra\nend\n"
    content = twin + twin + "start\nalpha one\nXXXXXXXXX\nend\n"
    old = "start\nalpha one\nbeta two\nend"
    assert fired(content, old) == "context_aware"
    assert replace(content, old, "NEW") == twin + twin + "NEW\n"


def test_multi_occurrence_yields_each_occurrence() -> None:
    assert list(_multi_occurrence(_Lines("ab ab ab"), "ab")) == ["ab", "ab", "ab"]
    assert list(_multi_occurrence(_Lines("aaaa"), "aa")) == ["aa", "aa"]
    assert list(_multi_occurrence(_Lines("xyz"), "ab")) == []


# --- errors -----------------------------------------------------------------------------------


def test_ambiguous_exact_match() -> None:
    assert error_of("x = 1\nx = 1\n", "x = 1").message == AMBIGUOUS


def test_ambiguous_fuzzy_match() -> None:
    # Found only by a fuzzy replacer, but twice: still "multiple matches".
    assert error_of("  x = 1\n  x = 1\n", "x  =  1").message == AMBIGUOUS


def test_overlapping_occurrences_are_ambiguous() -> None:
    assert error_of("aaa", "aa").message == AMBIGUOUS


def test_not_found() -> None:
    assert error_of("abc\ndef\n", "xyz").message == NOT_FOUND


def test_empty_old_is_not_found() -> None:
    assert error_of("abc", "").message == NOT_FOUND


def test_identical_old_and_new() -> None:
    # Checked before searching, so even an absent oldString reports it.
    assert error_of("abc", "zzz", "zzz").message == IDENTICAL


# --- replace_all, unicode, verbatim replacement -----------------------------------------------


def test_replace_all_exact() -> None:
    content = "a.b\na.b\nc\n"
    assert find_match(content, "a.b", replace_all=True) == [(0, 3), (4, 7)]
    assert replace(content, "a.b", "X", replace_all=True) == "X\nX\nc\n"


def test_replace_all_fuzzy_candidate() -> None:
    content = "  foo()\nbar\n  foo()\n"
    assert fired(content, "foo()  ", replace_all=True) == "line_trimmed"
    assert replace(content, "foo()  ", "X", replace_all=True) == "X\nbar\nX\n"


def test_replace_all_single_occurrence() -> None:
    assert replace("one two", "two", "2", replace_all=True) == "one 2"


def test_unicode_text() -> None:
    content = "naïve café 🍰\n    日本語テキスト\n"
    assert replace(content, "café 🍰", "thé 🍵") == "naïve thé 🍵\n    日本語テキスト\n"
    assert find_match(content, "café 🍰") == [(6, 12)]
    assert fired(content, "日本語テキスト  ") == "line_trimmed"
    assert replace(content, "日本語テキスト  ", "ok") == "naïve café 🍰\nok\n"


def test_new_is_inserted_verbatim() -> None:
    assert replace("a-b", "-", r"\1 $& \n") == r"a\1 $& \nb"


# --- properties -------------------------------------------------------------------------------

ALPHABET = st.sampled_from(list("ab c\n\t\\é😀"))


@given(st.data())
def test_unique_exact_substring_matches_str_replace(data: st.DataObject) -> None:
    content = data.draw(st.text(ALPHABET, min_size=1, max_size=200))
    i = data.draw(st.integers(0, len(content) - 1))
    j = data.draw(st.integers(i + 1, len(content)))
    old = content[i:j]
    assume(content.find(old) == content.rfind(old))
    new = data.draw(st.text(ALPHABET, max_size=20))
    assume(new != old)
    assert replace(content, old, new) == content.replace(old, new, 1)
    assert find_match(content, old) == [(i, j)]


@given(st.data())
def test_replace_all_exact_matches_str_replace(data: st.DataObject) -> None:
    content = data.draw(st.text(ALPHABET, min_size=1, max_size=80))
    i = data.draw(st.integers(0, len(content) - 1))
    old = content[i : data.draw(st.integers(i + 1, min(i + 4, len(content))))]
    assert replace(content, old, "<>", replace_all=True) == content.replace(old, "<>")


# Slips a model makes when copying text, to push inputs down the fuzzy paths.
SLIPS = [
    lambda s: s,
    str.strip,
    lambda s: f"  {s} ",
    lambda s: s.replace(" ", "  "),
    lambda s: s.replace("\n", "\n  "),
    lambda s: s.replace("\t", " "),
    lambda s: s.replace("\n", "\\n"),
    lambda s: s.replace("\\", "\\\\"),
]


@given(st.data())
def test_spans_are_consistent_with_replace(data: st.DataObject) -> None:
    # Any input either fails with a ToolError or yields in-order, non-overlapping
    # spans of one repeated text whose splice is exactly what replace returns.
    content = data.draw(st.text(ALPHABET, max_size=120))
    i = data.draw(st.integers(0, len(content)))
    j = data.draw(st.integers(min(i + 1, len(content)), len(content)))
    old = data.draw(st.sampled_from(SLIPS))(content[i:j])
    if data.draw(st.integers(0, 3)) == 0:
        old = data.draw(st.text(ALPHABET, max_size=30))
    new = "<" + data.draw(st.text(ALPHABET, max_size=10))  # never equal to old
    replace_all = data.draw(st.booleans())
    try:
        match = locate(content, old, replace_all)
    except ToolError as exc:
        assert exc.message in (NOT_FOUND, AMBIGUOUS)
        event(exc.message[:20])
        with pytest.raises(ToolError):
            replace(content, old, new, replace_all)
        return
    event(match.replacer)
    spans = match.spans
    assert spans == find_match(content, old, replace_all)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(content)
        previous_end = end
    assert len({content[start:end] for start, end in spans}) == 1
    assert replace(content, old, new, replace_all) == splice(content, spans, new)


@given(st.data(), st.sampled_from([replacers._WALK_LIMIT, 1]))
def test_lines_found_without_splitting_are_the_split_ones(data: st.DataObject, limit: int) -> None:
    """``_Lines`` finds the lines it is asked for with str.find and str.count from the
    line starts it knows; what it finds is what splitting the text gives."""
    content = data.draw(st.text(st.sampled_from(list("ab \n")), max_size=160))
    full = _Lines(content)
    assert full.starts is not None  # split
    lazy = _Lines(content)
    count = len(full.lines)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replacers, "_WALK_LIMIT", limit)  # 1: far lines make it split
        for needle in data.draw(st.lists(st.sampled_from(["a", "b", "ab", "ba", "b a"]))):
            assert lazy.containing(needle) == full.containing(needle)
        for _ in range(data.draw(st.integers(1, 6))):
            i = data.draw(st.integers(0, count - 1))
            j = data.draw(st.integers(i, count + 2))
            assert lazy.line_start(i) == full.starts[i]
            assert lazy.line(i) == full.lines[i]
            assert lazy.span(i, j) == full.lines[i:j]
            if i < j <= count:
                assert lazy.block(i, j - i) == full.block(i, j - i)
        assert lazy.count == count
    if limit > len(content):
        assert "lines" not in lazy.__dict__ and "starts" not in lazy.__dict__


def _levenshtein_table(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ca != cb))
    return row[-1]


@given(st.text(ALPHABET, max_size=70), st.text(ALPHABET, max_size=70))
def test_levenshtein_matches_dynamic_programming(a: str, b: str) -> None:
    assert levenshtein(a, b) == _levenshtein_table(a, b)


def test_levenshtein_examples() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3
    assert levenshtein("flaw", "lawn") == 2
    assert levenshtein("x" * 200, "y" + "x" * 200) == 1


# --- scale ------------------------------------------------------------------------------------


def test_large_file_simple_match() -> None:
    lines = [f"line {k} = value({k})" for k in range(100_000)]
    content = "\n".join(lines) + "\n"
    old = "\n".join(lines[50_000:50_003])
    new = "replaced\nblock"
    assert fired(content, old) == "simple"
    assert replace(content, old, new) == content.replace(old, new, 1)


def test_large_file_fuzzy_miss_terminates() -> None:
    # Every replacer scans the file and finds nothing.
    content = "\n".join(f"    item_{k} = compute({k}) \\" for k in range(20_000)) + "\n"
    old = "item_1 = compute(2)\nitem_2 = compute(3)\nitem_3 = compute(4)"
    assert error_of(content, old).message == NOT_FOUND
