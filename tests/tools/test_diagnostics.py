"""tools.changes.diagnostics (pure), and how the file tools report what an editor says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor, Runner
from tools.changes import diagnostics as diag
from tools.host import ToolHost


def d(
    line: int,
    message: str,
    *,
    character: int = 0,
    severity: int | None = 1,
    code: Any = None,
    source: str | None = "ls",
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "range": {
            "start": {"line": line, "character": character},
            "end": {"line": line, "character": character + 1},
        },
        "message": message,
    }
    if severity is not None:
        found["severity"] = severity
    if code is not None:
        found["code"] = code
    if source is not None:
        found["source"] = source
    return found


# --- formatting ----------------------------------------------------------------------------


def test_format_is_one_based_with_the_severity_name() -> None:
    assert diag.format_diagnostic(d(0, "boom", character=4)) == "ERROR [1:5] boom"
    assert diag.format_diagnostic(d(9, "hm", severity=2)) == "WARN [10:1] hm"
    assert diag.format_diagnostic(d(0, "no severity", severity=None)) == "ERROR [1:1] no severity"


def test_block_keeps_errors_only_and_caps_at_20() -> None:
    path = Path("/p/a.py")
    errors = [d(n, f"e{n}") for n in range(23)]
    text = diag.block(path, [d(0, "a warning", severity=2), *errors])
    lines = text.split("\n")
    assert lines[0] == '<diagnostics file="/p/a.py">'
    assert lines[1:21] == [f"ERROR [{n + 1}:1] e{n}" for n in range(20)]
    assert lines[21:] == ["... and 3 more", "</diagnostics>"]
    assert diag.block(path, [d(0, "only a warning", severity=2)]) == ""


def test_block_drops_duplicates_before_the_cap() -> None:
    text = diag.block(Path("/p/a.py"), [d(0, "same"), d(0, "same"), d(1, "same")])
    assert text.count("ERROR") == 2


# --- new versus baseline -------------------------------------------------------------------


def test_moved_errors_are_not_new() -> None:
    before = [d(3, "undefined x", code="E1")]
    after = [d(5, "undefined x", code="E1")]
    assert diag.introduced(before, after) == []


def test_a_second_occurrence_is_new() -> None:
    before = [d(3, "undefined x")]
    after = [d(3, "undefined x"), d(7, "undefined x")]
    assert diag.introduced(before, after) == [d(7, "undefined x")]


def test_code_and_source_tell_errors_apart() -> None:
    before = [d(1, "bad", code=1, source="a")]
    assert diag.introduced(before, [d(1, "bad", code=2, source="a")]) == [
        d(1, "bad", code=2, source="a")
    ]
    assert diag.introduced(before, [d(1, "bad", code=1, source="b")]) == [
        d(1, "bad", code=1, source="b")
    ]
    assert diag.introduced(before, [d(4, "bad", code=1, source="a")]) == []


def test_warnings_are_never_new_errors() -> None:
    assert diag.introduced([], [d(0, "w", severity=2), d(0, "i", severity=3)]) == []


def test_introduced_by_file_leaves_out_files_without_new_errors() -> None:
    a, b = Path("/p/a.py"), Path("/p/b.py")
    new = diag.introduced_by_file({a: [d(0, "old")]}, {a: [d(2, "old")], b: [d(0, "fresh")]})
    assert new == {b: [d(0, "fresh")]}


def test_malformed_diagnostics_are_dropped() -> None:
    good = d(0, "fine")
    bad = [{"message": "no range"}, {"range": {"start": {"line": -1, "character": 0}}}, "text"]
    assert diag.clean([good, *bad]) == [good]
    assert diag.clean("not a list") == []


# --- wording -------------------------------------------------------------------------------


def test_edit_notice_says_the_edit_was_applied() -> None:
    path = Path("/p/a.py")
    assert diag.edit_notice(path, {}) == ""
    assert diag.edit_notice(path, {path: [d(0, "x")]}) == (
        "\n\nThe edit was applied. The language server now reports these new errors in this "
        'file; fix them next:\n<diagnostics file="/p/a.py">\nERROR [1:1] x\n</diagnostics>'
    )


def test_write_notice_lists_at_most_five_other_files() -> None:
    path = Path("/p/main.py")
    others = {Path(f"/p/o{n}.py"): [d(0, f"e{n}")] for n in range(7)}
    text = diag.write_notice(path, others)
    assert text.startswith(
        "\n\nThe file was written. The change also introduced errors in other files"
    )
    assert text.count("<diagnostics") == 5
    assert "/p/o5.py" not in text and "/p/o6.py" not in text


def test_metadata_is_keyed_by_uri() -> None:
    path = Path("/p/a b.py")
    assert diag.to_metadata({path: [d(0, "x")]}) == {"file:///p/a%20b.py": [d(0, "x")]}


# --- the tools, with an editor that reports diagnostics ------------------------------------


class LintingEditor(RecordingEditor):
    """Reports an error for every line that contains ``BAD``, as a language server would."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[list[Path], int | None]] = []
        self.open: list[Path] = []

    def capabilities(self) -> frozenset[str]:
        return frozenset({"diagnostics"})

    def open_documents(self) -> list[Path]:
        return self.open

    async def diagnostics(
        self, paths: list[Path], wait_ms: int | None = None
    ) -> dict[Path, list[dict[str, Any]]]:
        self.asked.append((list(paths), wait_ms))
        found: dict[Path, list[dict[str, Any]]] = {}
        for path in paths:
            text = path.read_text() if path.exists() else ""
            found[path] = [
                d(n, "bad name", character=line.index("BAD"))
                for n, line in enumerate(text.splitlines())
                if "BAD" in line
            ]
        return found


@pytest.fixture
def linting() -> LintingEditor:
    return LintingEditor()


@pytest.fixture
def lint_run(host: ToolHost, linting: LintingEditor) -> Runner:
    return Runner(host, linting)


async def test_edit_appends_only_new_errors(lint_run: Runner, worktree: Path) -> None:
    path = worktree / "a.py"
    path.write_text("x = BAD\ny = 1\n")
    await lint_run("read", {"filePath": str(path)})

    result = await lint_run(
        "edit", {"filePath": str(path), "oldString": "y = 1", "newString": "y = BAD"}
    )

    assert not result.is_error, result.output
    assert result.output.endswith(
        f'<diagnostics file="{path}">\nERROR [2:5] bad name\n</diagnostics>'
    )
    assert "[1:5]" not in result.output
    assert list(result.metadata["diagnostics"]) == [path.as_uri()]


async def test_no_report_when_nothing_new(
    lint_run: Runner, linting: LintingEditor, worktree: Path
) -> None:
    path = worktree / "a.py"
    path.write_text("x = BAD\n")
    await lint_run("read", {"filePath": str(path)})

    result = await lint_run("edit", {"filePath": str(path), "oldString": "x", "newString": "z"})

    assert result.output == "Edit applied successfully."
    assert result.metadata["diagnostics"] == {}
    assert linting.asked == [([path], 0), ([path], None)]


async def test_multiedit_reports_like_edit(lint_run: Runner, worktree: Path) -> None:
    path = worktree / "m.py"
    path.write_text("a\nb\n")
    await lint_run("read", {"filePath": str(path)})

    result = await lint_run(
        "multiedit",
        {
            "filePath": str(path),
            "edits": [{"oldString": "a", "newString": "BAD"}, {"oldString": "b", "newString": "c"}],
        },
    )

    assert "The edit was applied." in result.output
    assert "ERROR [1:1] bad name" in result.output


async def test_write_asks_about_the_open_files_too(
    lint_run: Runner, linting: LintingEditor, worktree: Path
) -> None:
    other = worktree / "other.py"
    other.write_text("fine\n")
    linting.open = [other]
    path = worktree / "w.py"

    result = await lint_run("write", {"filePath": str(path), "content": "BAD\n"})

    assert linting.asked == [([path, other], 0), ([path], None), ([other], 0)]
    assert "The file was written." in result.output


async def test_apply_patch_reports_added_and_updated_files(
    lint_run: Runner, worktree: Path
) -> None:
    (worktree / "u.py").write_text("ok\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Add File: n.py",
            "+BAD",
            "*** Update File: u.py",
            "@@",
            "-ok",
            "+still ok",
            "*** End Patch",
        ]
    )

    result = await lint_run("apply_patch", {"patchText": patch})

    assert not result.is_error, result.output
    assert result.output.endswith(
        "The patch was applied. The language server now reports new errors in these files; "
        f'fix them next:\n<diagnostics file="{worktree / "n.py"}">\nERROR [1:1] bad name\n'
        "</diagnostics>"
    )


async def test_the_headless_editor_reports_nothing(run: Runner, worktree: Path) -> None:
    path = worktree / "h.py"
    result = await run("write", {"filePath": str(path), "content": "BAD\n"})
    assert result.output == "Wrote file successfully."
    assert result.metadata["diagnostics"] == {}


def test_lsp_columns_count_characters_and_convert_to_the_encoding() -> None:
    from tools.builtin.lsp import to_units

    line = "ñamé = café(x)"  # the model points at `café` as character 8
    assert to_units(line, 8, "utf-32") == 7
    assert to_units(line, 8, "utf-16") == 7
    assert to_units(line, 8, "utf-8") == 9  # ñ and é take two bytes each
    emoji = "😀 = f(x)"
    assert to_units(emoji, 5, "utf-16") == 5  # the emoji is two UTF-16 units
    assert to_units("ab", 10, "utf-16") == 9  # past the end stays past the end
