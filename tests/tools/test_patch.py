"""The apply_patch format on its own: parser, line matcher and in-memory application."""

from __future__ import annotations

import pytest

from tools.changes.patch import (
    AddHunk,
    DeleteHunk,
    PatchApplyError,
    PatchParseError,
    UpdateChunk,
    UpdateHunk,
    add_file_text,
    derive_new_contents,
    is_empty_patch,
    parse_patch,
    seek_sequence,
    strip_heredoc,
)

MISSING_MARKERS = "Invalid patch format: missing Begin/End markers"


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


# --- parsing: the grammar ---------------------------------------------------------------------


def test_every_section_kind_in_order() -> None:
    text = patch(
        "*** Add File: docs/new.md",
        "+# Title",
        "+",
        "+body",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def main():",
        " keep",
        "-old",
        "+new",
    )

    assert parse_patch(text) == [
        AddHunk("docs/new.md", "# Title\n\nbody"),
        DeleteHunk("old.txt"),
        UpdateHunk(
            "src/app.py",
            "src/main.py",
            [UpdateChunk(["keep", "old"], ["keep", "new"], "def main():", False)],
        ),
    ]


def test_paths_are_trimmed() -> None:
    hunks = parse_patch(patch("*** Delete File:    spaced name.txt   ", "*** Add File:\tx.txt"))

    assert hunks == [DeleteHunk("spaced name.txt"), AddHunk("x.txt", "")]


def test_a_header_without_a_path_is_skipped() -> None:
    assert parse_patch(patch("*** Add File:   ", "+ignored", "*** Delete File: real.txt")) == [
        DeleteHunk("real.txt")
    ]


def test_unknown_headers_and_stray_lines_are_skipped() -> None:
    text = patch("Here is the change:", "*** Frobnicate File: x", "*** Delete File: a.txt", "done")

    assert parse_patch(text) == [DeleteHunk("a.txt")]


def test_add_keeps_only_plus_lines() -> None:
    (hunk,) = parse_patch(patch("*** Add File: a.txt", "+one", "two", " three", "-four", "+five"))

    assert hunk == AddHunk("a.txt", "one\nfive")


def test_added_text_ends_with_one_newline_unless_empty() -> None:
    assert add_file_text(AddHunk("a", "x\ny")) == "x\ny\n"
    assert add_file_text(AddHunk("a", "")) == ""
    # A final "+" line is one empty line before the newline OpenCode drops.
    (hunk,) = parse_patch(patch("*** Add File: a.txt", "+x", "+"))
    assert add_file_text(hunk) == "x\n"


def test_empty_move_to_is_not_a_move() -> None:
    (hunk,) = parse_patch(patch("*** Update File: a.txt", "*** Move to:  ", "@@", "-a", "+b"))

    assert hunk == UpdateHunk("a.txt", None, [UpdateChunk(["a"], ["b"])])


def test_chunk_context_is_the_trimmed_text_after_the_at_signs() -> None:
    (hunk,) = parse_patch(
        patch("*** Update File: a.py", "@@   class A:  ", "-x", "@@", "-y", "@@@ odd", "-z")
    )

    assert isinstance(hunk, UpdateHunk)
    assert [c.context for c in hunk.chunks] == ["class A:", None, "@ odd"]
    assert [c.old_lines for c in hunk.chunks] == [["x"], ["y"], ["z"]]


def test_lines_before_the_first_chunk_and_unprefixed_lines_are_ignored() -> None:
    (hunk,) = parse_patch(
        patch("*** Update File: a.txt", "stray", "-not a change", "@@", " a", "junk", "", "+b")
    )

    assert isinstance(hunk, UpdateHunk)
    assert hunk.chunks == [UpdateChunk(["a"], ["a", "b"])]


def test_a_chunk_ends_at_the_next_header() -> None:
    hunks = parse_patch(
        patch("*** Update File: a.txt", "@@", "-a", "+b", "*** Update File: b.txt", "@@", "-c")
    )

    assert hunks == [
        UpdateHunk("a.txt", None, [UpdateChunk(["a"], ["b"])]),
        UpdateHunk("b.txt", None, [UpdateChunk(["c"], [])]),
    ]


def test_end_of_file_marks_the_chunk_and_later_chunks_still_parse() -> None:
    (hunk,) = parse_patch(
        patch("*** Update File: a.txt", "@@", "-a", "*** End of File", "@@", "-b", "+c")
    )

    assert isinstance(hunk, UpdateHunk)
    assert hunk.chunks == [
        UpdateChunk(["a"], [], None, True),
        UpdateChunk(["b"], ["c"], None, False),
    ]


def test_markers_are_found_by_trimmed_line_equality() -> None:
    text = "Sure:\n   *** Begin Patch  \n*** Delete File: a.txt\n\t*** End Patch\nthanks"

    assert parse_patch(text) == [DeleteHunk("a.txt")]


def test_an_end_marker_with_a_prefix_is_content_not_the_end() -> None:
    (hunk,) = parse_patch(patch("*** Add File: a.txt", "+*** End Patch", "+after"))

    assert hunk == AddHunk("a.txt", "*** End Patch\nafter")


def test_crlf_patches_parse_as_lf() -> None:
    text = patch("*** Update File: a.txt", "@@ ctx", " keep", "-old", "+new").replace("\n", "\r\n")

    (hunk,) = parse_patch(text)

    assert hunk == UpdateHunk("a.txt", None, [UpdateChunk(["keep", "old"], ["keep", "new"], "ctx")])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "*** Delete File: a.txt",
        "*** Begin Patch\n*** Delete File: a.txt",
        "*** Delete File: a.txt\n*** End Patch",
        "*** End Patch\n*** Begin Patch",
        "*** Begin Patch *** End Patch",
    ],
)
def test_missing_or_misordered_markers(text: str) -> None:
    with pytest.raises(PatchParseError) as caught:
        parse_patch(text)
    assert str(caught.value) == MISSING_MARKERS


def test_only_the_two_markers_is_an_empty_patch() -> None:
    assert is_empty_patch("*** Begin Patch\n*** End Patch")
    assert is_empty_patch("  *** Begin Patch\r\n*** End Patch\n\n")
    assert is_empty_patch("*** Begin Patch\r*** End Patch")
    assert not is_empty_patch("*** Begin Patch\n\n*** End Patch")
    assert not is_empty_patch(patch("*** Frobnicate File: x"))
    assert parse_patch("*** Begin Patch\n*** End Patch") == []


# --- the heredoc wrapper ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "opening", ["cat <<'EOF'", 'cat <<"EOF"', "<<EOF", "cat   <<EOF  ", "<<'EOF'"]
)
def test_heredoc_wrapper_is_stripped(opening: str) -> None:
    body = patch("*** Delete File: a.txt")

    assert strip_heredoc(f"{opening}\n{body}\nEOF") == body
    assert parse_patch(f"{opening}\n{body}\nEOF\n") == [DeleteHunk("a.txt")]


def test_heredoc_tag_may_be_any_word() -> None:
    body = patch("*** Delete File: a.txt")

    assert strip_heredoc(f"<<'PATCH_1'\n{body}\nPATCH_1") == body


@pytest.mark.parametrize(
    "text",
    [
        "cat <<'EOF'\nbody\nEND",  # the closing tag must repeat the opening one
        "echo <<EOF\nbody\nEOF",  # only `cat` may precede it
        "<<EOF\nbody\nEOF trailing",
    ],
)
def test_not_a_heredoc_is_left_alone(text: str) -> None:
    assert strip_heredoc(text) == text


# --- the line matcher -------------------------------------------------------------------------


def test_exact_match_from_the_start_index() -> None:
    lines = ["a", "b", "a", "b"]

    assert seek_sequence(lines, ["a", "b"], 0) == 0
    assert seek_sequence(lines, ["a", "b"], 1) == 2
    assert seek_sequence(lines, ["a", "b"], 3) == -1


def test_empty_pattern_never_matches() -> None:
    assert seek_sequence(["a"], [], 0) == -1


def test_trailing_whitespace_pass() -> None:
    assert seek_sequence(["x", "value = 1   ", "y\t"], ["value = 1", "y"], 0) == 1


def test_trimmed_pass() -> None:
    assert seek_sequence(["x", "    return a", "\tend"], ["return a  ", "  end"], 0) == 1


def test_unicode_punctuation_pass() -> None:
    lines = [
        "print(“hello”)",
        "it‘s ‚quoted‛ — fine – ok ‐ ‑ ‒ ―",
        "wait…",
        "a\xa0b",
        "„low‟",
    ]
    pattern = ['print("hello")', "it's 'quoted' - fine - ok - - - -", "wait...", "a b", '"low"']

    assert seek_sequence(lines, pattern, 0) == 0


def test_punctuation_is_folded_on_both_sides() -> None:
    assert seek_sequence(['say "hi"'], ["say “hi”"], 0) == 0


def test_a_stricter_pass_wins_over_an_earlier_lenient_match() -> None:
    # "foo  " at 0 matches only leniently; the exact "foo" at 2 comes first in pass order.
    assert seek_sequence(["foo  ", "x", "foo"], ["foo"], 0) == 2
    assert seek_sequence(["  foo", "x", "foo  "], ["foo"], 0) == 2  # rstrip beats trim


def test_no_pass_matches() -> None:
    assert seek_sequence(["alpha", "beta"], ["gamma"], 0) == -1
    assert seek_sequence(["a-b"], ["a_b"], 0) == -1


def test_eof_tries_the_end_of_the_file_first() -> None:
    lines = ["end", "x", "end"]

    assert seek_sequence(lines, ["end"], 0) == 0
    assert seek_sequence(lines, ["end"], 0, eof=True) == 2
    # Not at the end: the forward search still finds it.
    assert seek_sequence(["end", "x"], ["end"], 0, eof=True) == 0


def test_eof_position_before_the_start_is_not_used() -> None:
    assert seek_sequence(["a", "b"], ["a", "b"], 1, eof=True) == -1


def test_js_whitespace_semantics() -> None:
    # JavaScript's trim() strips a BOM but not U+001C, unlike Python's strip().
    assert seek_sequence(["\ufeffline"], ["line"], 0) == 0
    assert seek_sequence(["\x1cline"], ["line"], 0) == -1


# --- applying chunks --------------------------------------------------------------------------


def chunk(
    old: list[str], new: list[str], context: str | None = None, eof: bool = False
) -> UpdateChunk:
    return UpdateChunk(old, new, context, eof)


def test_replaces_the_matched_lines() -> None:
    text = "a\nb\nc\n"

    assert derive_new_contents("/p", [chunk(["b"], ["B", "B2"])], text) == "a\nB\nB2\nc\n"


def test_chunks_apply_in_order_from_a_moving_cursor() -> None:
    text = "x\ny\nx\ny\n"
    chunks = [chunk(["x"], ["X1"]), chunk(["x"], ["X2"])]

    assert derive_new_contents("/p", chunks, text) == "X1\ny\nX2\ny\n"


def test_context_moves_the_cursor_past_its_line() -> None:
    text = "def a():\n    return 0\ndef b():\n    return 0\n"

    result = derive_new_contents(
        "/p", [chunk(["    return 0"], ["    return 1"], "def b():")], text
    )

    assert result == "def a():\n    return 0\ndef b():\n    return 1\n"


def test_context_is_matched_leniently() -> None:
    text = "  def  f():\nbody\n"

    assert derive_new_contents("/p", [chunk(["body"], ["BODY"], "def  f():")], text) == (
        "  def  f():\nBODY\n"
    )


def test_missing_context_names_it_and_the_file() -> None:
    with pytest.raises(PatchApplyError) as caught:
        derive_new_contents("/w/a.py", [chunk(["x"], ["y"], "def nope():")], "x\n")

    assert str(caught.value) == "Failed to find context 'def nope():' in /w/a.py"


def test_missing_lines_are_quoted_in_the_error() -> None:
    with pytest.raises(PatchApplyError) as caught:
        derive_new_contents("/w/a.py", [chunk(["one", "two", ""], ["1"])], "zero\n")

    assert str(caught.value) == "Failed to find expected lines in /w/a.py:\none\ntwo\n"


def test_lines_must_follow_the_context() -> None:
    with pytest.raises(PatchApplyError, match="Failed to find expected lines"):
        derive_new_contents("/p", [chunk(["a"], ["b"], "marker")], "a\nmarker\n")


def test_pure_insertion_appends_at_the_end_even_with_context() -> None:
    text = "def f():\n    pass\n\nx = 1\n"

    result = derive_new_contents("/p", [chunk([], ["y = 2"], "def f():")], text)

    assert result == "def f():\n    pass\n\nx = 1\ny = 2\n"


def test_insertions_at_the_end_keep_their_order() -> None:
    chunks = [chunk([], ["first"]), chunk(["a"], ["A"]), chunk([], ["second"])]

    assert derive_new_contents("/p", chunks, "a\n") == "A\nfirst\nsecond\n"


def test_trailing_blank_old_line_is_dropped_when_it_does_not_match() -> None:
    # The blank line stands for the file's final newline, which is not a line of its own.
    result = derive_new_contents("/p", [chunk(["b", ""], ["B", ""])], "a\nb\n")

    assert result == "a\nB\n"


def test_trailing_blank_old_line_is_kept_when_it_matches() -> None:
    result = derive_new_contents("/p", [chunk(["b", ""], ["B", ""])], "b\n\nc\n")

    assert result == "B\n\nc\n"


def test_result_ends_with_a_newline() -> None:
    assert derive_new_contents("/p", [chunk(["b"], ["B"])], "a\nb") == "a\nB\n"


def test_a_final_blank_line_survives() -> None:
    assert derive_new_contents("/p", [chunk(["a"], ["A"])], "a\n\n") == "A\n\n"


def test_deleting_everything_leaves_an_empty_file() -> None:
    assert derive_new_contents("/p", [chunk(["a", "b"], [])], "a\nb\n") == ""


def test_end_of_file_chunk_takes_the_last_occurrence() -> None:
    text = "}\nmiddle\n}\n"

    assert derive_new_contents("/p", [chunk(["}"], ["} // end"], eof=True)], text) == (
        "}\nmiddle\n} // end\n"
    )


def test_replacement_text_comes_from_the_patch_and_other_lines_are_untouched() -> None:
    text = "msg = “hi”   \n    keep = ‘x’  \n"

    result = derive_new_contents("/p", [chunk(['msg = "hi"'], ['msg = "bye"'])], text)

    assert result == 'msg = "bye"\n    keep = ‘x’  \n'


def test_several_chunks_apply_bottom_up_with_changing_lengths() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 11))
    chunks = [
        chunk(["line 2"], ["two", "two more"]),
        chunk(["line 5", "line 6"], []),
        chunk(["line 9"], ["nine"]),
    ]

    result = derive_new_contents("/p", chunks, text)

    assert result.splitlines() == [
        "line 1",
        "two",
        "two more",
        "line 3",
        "line 4",
        "line 7",
        "line 8",
        "nine",
        "line 10",
    ]
