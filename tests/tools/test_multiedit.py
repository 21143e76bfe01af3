"""The multiedit tool: edits applied in order, in memory, and written all or nothing."""

from __future__ import annotations

import codecs
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.tools.helpers import ask_for_edits, make
from tools.builtin import edit, multiedit, write
from tools.changes.positions import apply_text_edits
from tools.host import ToolHost
from tools.result import ToolResult


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the tools under test, so these tests do not depend on the other built-ins.
    return ToolHost(worktree, tools=[write.tool, edit.tool, multiedit.tool])


def change(old: str, new: str, **extra: Any) -> dict[str, Any]:
    return {"oldString": old, "newString": new, **extra}


async def do_multiedit(run: Runner, path: Path | str, *edits: dict[str, Any]) -> ToolResult:
    return await run("multiedit", {"filePath": str(path), "edits": list(edits)})


async def test_edits_apply_in_order(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    old = "def f():\n    return 1\n\nx = f()\ny = f()\n"
    path = make(worktree / "src" / "m.py", old, read_by=run)

    result = await do_multiedit(
        run,
        path,
        change("return 1", "return 2"),
        change("f(", "g(", replaceAll=True),
        change("return 2", "return 3"),  # sees the text the first edit produced
    )

    assert not result.is_error, result.output
    assert result.output == "Edit applied successfully."
    assert result.title == "src/m.py"
    assert path.read_text() == "def g():\n    return 3\n\nx = g()\ny = g()\n"
    assert result.metadata["results"] == [
        {"index": 1, "replaced": True, "replacements": 1},
        {"index": 2, "replaced": True, "replacements": 3},
        {"index": 3, "replaced": True, "replacements": 1},
    ]
    # One ask, for the combined change.
    (ask,) = editor.asks
    assert ask.permission == "edit" and ask.patterns == ["src/m.py"]
    assert "-def f():\n" in ask.metadata["diff"] and "+    return 3\n" in ask.metadata["diff"]
    assert result.metadata["filediff"] == [{"file": "src/m.py", "additions": 4, "deletions": 4}]
    edits = result.metadata["edit"]["documentChanges"][0]["edits"]
    assert apply_text_edits(old, edits) == path.read_text()


async def test_a_failing_edit_leaves_the_file_byte_identical(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    data = b"alpha\r\nbeta\r\ngamma\r\n"
    path = make(worktree / "f.txt", data, read_by=run)
    mtime = path.stat().st_mtime_ns

    result = await do_multiedit(
        run,
        path,
        change("alpha", "ALPHA"),
        change("delta", "DELTA"),
        change("gamma", "GAMMA"),
    )

    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.metadata["failedEdit"] == 2
    assert result.output.startswith("Edit 2 of 3 failed: Could not find oldString in the file.")
    assert f"No edits were applied: {path} was left unchanged." in result.output
    assert path.read_bytes() == data
    assert path.stat().st_mtime_ns == mtime
    assert editor.asks == []


async def test_an_ambiguous_edit_is_named(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "a\nb\nb\n", read_by=run)

    result = await do_multiedit(run, path, change("a", "A"), change("b", "B"))

    assert result.is_error
    assert result.output.startswith("Edit 2 of 2 failed: Found multiple matches for oldString.")
    assert path.read_text() == "a\nb\nb\n"


async def test_an_identical_edit_is_named(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "a\n", read_by=run)

    result = await do_multiedit(run, path, change("a", "a"))

    assert result.is_error
    assert result.output.startswith(
        "Edit 1 of 1 failed: No changes to apply: oldString and newString are identical."
    )


async def test_empty_first_old_string_creates_the_file(run: Runner, worktree: Path) -> None:
    path = worktree / "new" / "cfg.toml"

    result = await do_multiedit(
        run, path, change("", "[tool]\nname = 'x'\n"), change("name = 'x'", "name = 'y'")
    )

    assert not result.is_error, result.output
    assert path.read_text() == "[tool]\nname = 'y'\n"
    assert "new file mode" in result.metadata["diff"]


async def test_empty_old_string_on_an_existing_file_is_refused_as_edit_refuses_it(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "cfg.toml", "name = 'x'\n", read_by=run)

    result = await do_multiedit(run, path, change("", "replaced\n"))
    later = await do_multiedit(run, path, change("x", "y"), change("", "again\n"))

    assert result.is_error and "use write for an intentional full-file" in result.output
    assert later.is_error and later.metadata["failedEdit"] == 2
    assert path.read_text() == "name = 'x'\n"


async def test_a_new_file_keeps_the_bom_of_its_first_edit(run: Runner, worktree: Path) -> None:
    path = worktree / "bom.txt"

    result = await do_multiedit(run, path, change("", "\ufeffa\n"), change("a", "b"))

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"b\n"


async def test_missing_file_without_create_is_not_found(run: Runner, worktree: Path) -> None:
    path = worktree / "missing.txt"

    result = await do_multiedit(run, path, change("a", "b"))

    assert result.is_error
    assert result.metadata["error"] == "not_found"
    assert result.output == f"File {path} not found"


async def test_must_read_before_editing(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "a\n")

    result = await do_multiedit(run, path, change("a", "b"))

    assert result.is_error
    assert result.output.startswith(f"You must read file {path} before overwriting it.")
    assert path.read_text() == "a\n"


async def test_per_edit_file_path_is_ignored(run: Runner, worktree: Path) -> None:
    path = make(worktree / "target.txt", "a\n", read_by=run)
    other = make(worktree / "other.txt", "a\n", read_by=run)

    result = await do_multiedit(run, path, change("a", "b", filePath=str(other)))

    assert not result.is_error, result.output
    assert path.read_text() == "b\n"
    assert other.read_text() == "a\n"


async def test_no_edits_is_invalid(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "a\n", read_by=run)

    result = await do_multiedit(run, path)

    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert "edits" in result.output


async def test_encoding_bom_line_endings_and_mode_survive(run: Runner, worktree: Path) -> None:
    data = codecs.BOM_UTF16_LE + "one\r\ntwo\r\nthree\r\n".encode("utf-16-le")
    path = make(worktree / "w.cmd", data, read_by=run)
    path.chmod(0o755)

    result = await do_multiedit(
        run, path, change("one\ntwo", "1\n2"), change("three\n", "3\nfour\n")
    )

    assert not result.is_error, result.output
    expected = "1\r\n2\r\n3\r\nfour\r\n".encode("utf-16-le")
    assert path.read_bytes() == codecs.BOM_UTF16_LE + expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


async def test_rejected_multiedit_leaves_the_file(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    editor.reply = "reject"
    path = make(worktree / "f.txt", "a\nb\n", read_by=run)

    result = await do_multiedit(run, path, change("a", "A"), change("b", "B"))

    assert result.metadata["error"] == "permission_rejected"
    assert path.read_text() == "a\nb\n"


async def test_external_path_asks_external_directory(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    outside = make(worktree.parent / "elsewhere" / "f.txt", "a\n", read_by=run)

    result = await do_multiedit(run, outside, change("a", "b"))

    assert not result.is_error, result.output
    assert [a.permission for a in editor.asks] == ["external_directory"]
    assert outside.read_text() == "b\n"
