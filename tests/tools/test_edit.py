"""The edit tool on real files: matching, read-before-write, and what survives an edit."""

from __future__ import annotations

import asyncio
import codecs
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.tools.helpers import ask_for_edits, make, mark_read
from tools.builtin import edit, multiedit, read, write
from tools.changes.positions import apply_text_edits
from tools.host import ToolHost
from tools.result import ToolResult


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the tools under test, so these tests do not depend on the other built-ins.
    return ToolHost(worktree, tools=[write.tool, edit.tool, multiedit.tool])


async def do_edit(run: Runner, path: Path | str, old: str, new: str, **extra: Any) -> ToolResult:
    return await run("edit", {"filePath": str(path), "oldString": old, "newString": new, **extra})


def apply_workspace_edit(old: str, result: ToolResult) -> str:
    changes = result.metadata["edit"]["documentChanges"]
    text_edits = [e for change in changes if "edits" in change for e in change["edits"]]
    return apply_text_edits(old, text_edits)


# --- the happy path and its metadata ------------------------------------------------------


async def test_replaces_the_unique_match(run: Runner, worktree: Path) -> None:
    path = make(worktree / "src" / "app.py", "a = 1\nb = 2\nc = 3\n", read_by=run)

    result = await do_edit(run, path, "b = 2", "b = 20")

    assert not result.is_error, result.output
    assert result.output == "Edit applied successfully."
    assert result.title == "src/app.py"
    assert path.read_text() == "a = 1\nb = 20\nc = 3\n"
    meta = result.metadata
    assert meta["filepath"] == str(path)
    assert "--- a/src/app.py\n+++ b/src/app.py\n" in meta["diff"]
    assert "-b = 2\n+b = 20\n" in meta["diff"]
    assert meta["filediff"] == [{"file": "src/app.py", "additions": 1, "deletions": 1}]


async def test_relative_path_resolves_against_the_project(run: Runner, worktree: Path) -> None:
    path = make(worktree / "notes.txt", "hello\n", read_by=run)

    result = await do_edit(run, "notes.txt", "hello", "goodbye")

    assert not result.is_error, result.output
    assert path.read_text() == "goodbye\n"


async def test_workspace_edit_turns_old_text_into_new(run: Runner, worktree: Path) -> None:
    old = "".join(f"line {n}\n" for n in range(40))
    path = make(worktree / "f.txt", old, read_by=run)

    result = await do_edit(run, path, "line 7\nline 8\n", "seven\n")

    assert not result.is_error, result.output
    changes = result.metadata["edit"]["documentChanges"]
    assert changes[0]["textDocument"]["uri"] == path.as_uri()
    assert apply_workspace_edit(old, result) == path.read_text()


async def test_replace_all_changes_every_occurrence(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.py", "foo()\nbar(foo)\nfoo = 1\n", read_by=run)

    result = await do_edit(run, path, "foo", "baz", replaceAll=True)

    assert not result.is_error, result.output
    assert path.read_text() == "baz()\nbar(baz)\nbaz = 1\n"


# --- failures -------------------------------------------------------------------------------


async def test_not_found_leaves_the_file(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "alpha\nbeta\n", read_by=run)

    result = await do_edit(run, path, "gamma", "delta")

    assert result.is_error
    assert result.output.startswith("Could not find oldString in the file.")
    assert result.metadata["error"] == "failed"
    assert path.read_text() == "alpha\nbeta\n"


async def test_multiple_matches_asks_for_context(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "x = 1\nx = 1\n", read_by=run)

    result = await do_edit(run, path, "x = 1", "x = 2")

    assert result.is_error
    assert result.output.startswith("Found multiple matches for oldString.")
    assert path.read_text() == "x = 1\nx = 1\n"


async def test_identical_strings_are_refused(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "same\n", read_by=run)

    result = await do_edit(run, path, "same", "same")

    assert result.is_error
    assert result.output == "No changes to apply: oldString and newString are identical."


async def test_strings_differing_only_in_line_endings_are_identical(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "f.txt", "a\nb\n", read_by=run)

    result = await do_edit(run, path, "a\nb", "a\r\nb")

    assert result.is_error
    assert result.output == "No changes to apply: oldString and newString are identical."
    assert path.read_bytes() == b"a\nb\n"


async def test_missing_file_is_not_found(run: Runner, worktree: Path) -> None:
    path = worktree / "missing.txt"

    result = await do_edit(run, path, "a", "b")

    assert result.is_error
    assert result.output == f"File {path} not found"
    assert result.metadata["error"] == "not_found"


async def test_directory_is_refused(run: Runner, worktree: Path) -> None:
    (worktree / "pkg").mkdir()

    result = await do_edit(run, worktree / "pkg", "a", "b")

    assert result.is_error
    assert result.output == f"Path is a directory, not a file: {worktree / 'pkg'}"


async def test_empty_file_path_is_required(run: Runner) -> None:
    result = await do_edit(run, "", "a", "b")

    assert result.is_error
    assert result.output == "filePath is required"


# --- read-before-write ------------------------------------------------------------------------


async def test_must_read_before_editing(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "old\n")

    result = await do_edit(run, path, "old", "new")

    assert result.is_error
    assert result.output.startswith(f"You must read file {path} before overwriting it.")
    assert path.read_text() == "old\n"


async def test_file_modified_since_read_is_refused(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "old\n", read_by=run)
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))

    result = await do_edit(run, path, "old", "new")

    assert result.is_error
    assert result.output.startswith(f"File {path} has been modified since it was last read.")
    assert "Please read the file again before modifying it." in result.output
    assert path.read_text() == "old\n"


async def test_consecutive_edits_need_no_reread(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "one two three\n", read_by=run)

    first = await do_edit(run, path, "one", "1")
    second = await do_edit(run, path, "two", "2")

    assert not first.is_error and not second.is_error, second.output
    assert path.read_text() == "1 2 three\n"


# --- empty oldString: create or overwrite ---------------------------------------------------------


async def test_empty_old_string_creates_file_and_parents(run: Runner, worktree: Path) -> None:
    path = worktree / "deep" / "er" / "new.py"

    result = await do_edit(run, path, "", "print('hi')\n")

    assert not result.is_error, result.output
    assert path.read_text() == "print('hi')\n"
    assert result.title == "deep/er/new.py"
    assert "+++ b/deep/er/new.py" in result.metadata["diff"]
    assert apply_workspace_edit("", result) == "print('hi')\n"
    # The creation counts as a read: the next edit goes straight through.
    assert not (await do_edit(run, path, "hi", "bye")).is_error


async def test_empty_old_string_on_an_existing_file_is_refused(run: Runner, worktree: Path) -> None:
    # OpenCode 1.18.33 refuses, with these words, rather than overwriting the file.
    path = make(worktree / "run.sh", b"old\n", read_by=run)

    result = await do_edit(run, path, "", "new\n")

    assert result.is_error
    assert result.output == (
        "oldString cannot be empty when editing an existing file. Provide the exact text to "
        "replace, or use write for an intentional full-file replacement."
    )
    assert path.read_bytes() == b"old\n"


async def test_empty_old_string_on_an_existing_empty_file_is_refused_too(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "empty.txt", b"")

    result = await do_edit(run, path, "", "new\n")

    assert result.is_error and "use write" in result.output
    assert path.read_bytes() == b""


async def test_empty_old_string_keeps_the_bom_of_a_new_file(run: Runner, worktree: Path) -> None:
    path = worktree / "bom.txt"

    result = await do_edit(run, path, "", "\ufeffhi\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"hi\n"


# --- what an edit preserves -------------------------------------------------------------------


async def test_crlf_file_stays_crlf(run: Runner, worktree: Path) -> None:
    path = make(worktree / "win.txt", b"one\r\ntwo\r\nthree\r\n", read_by=run)

    result = await do_edit(run, path, "one\ntwo\n", "uno\ndos\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_lf_file_stays_lf_when_given_crlf(run: Runner, worktree: Path) -> None:
    path = make(worktree / "unix.txt", b"one\ntwo\nthree\n", read_by=run)

    result = await do_edit(run, path, "one\r\ntwo", "uno\r\ndos")

    assert not result.is_error, result.output
    assert path.read_bytes() == b"uno\ndos\nthree\n"


async def test_lenient_match_in_crlf_file_keeps_line_endings(run: Runner, worktree: Path) -> None:
    path = make(worktree / "win.txt", b"x\r\n    foo\r\ny\r\n", read_by=run)

    # The trailing blanks make this a whitespace-tolerant match of a whole line.
    result = await do_edit(run, path, "foo   ", "    bar")

    assert not result.is_error, result.output
    assert path.read_bytes() == b"x\r\n    bar\r\ny\r\n"


async def test_crlf_workspace_edit_turns_old_text_into_new(run: Runner, worktree: Path) -> None:
    old = "a\r\nb\r\nc\r\n"
    path = make(worktree / "win.txt", old.encode(), read_by=run)

    result = await do_edit(run, path, "b", "B\nB2")

    assert not result.is_error, result.output
    assert path.read_bytes() == b"a\r\nB\r\nB2\r\nc\r\n"
    assert apply_workspace_edit(old, result) == path.read_bytes().decode()


async def test_utf8_bom_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "bom.cs", codecs.BOM_UTF8 + b"class A {}\n", read_by=run)

    result = await do_edit(run, path, "class A", "class B")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"class B {}\n"


async def test_utf16_file_is_kept(run: Runner, worktree: Path) -> None:
    data = codecs.BOM_UTF16_LE + "héllo\r\nwörld\r\n".encode("utf-16-le")
    path = make(worktree / "wide.txt", data, read_by=run)

    result = await do_edit(run, path, "wörld", "wereld")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "héllo\r\nwereld\r\n".encode("utf-16-le")


async def test_latin1_file_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "old.txt", "café = 1\n".encode("latin-1"), read_by=run)

    result = await do_edit(run, path, "1", "2 # señor")

    assert not result.is_error, result.output
    assert path.read_bytes() == "café = 2 # señor\n".encode("latin-1")


async def test_text_the_encoding_cannot_hold_is_refused(run: Runner, worktree: Path) -> None:
    data = "café\n".encode("latin-1")
    path = make(worktree / "old.txt", data, read_by=run)

    result = await do_edit(run, path, "café", "€uro")

    assert result.is_error
    assert "latin-1" in result.output and "U+20AC" in result.output
    assert result.metadata["error"] == "failed"
    assert path.read_bytes() == data


async def test_executable_mode_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "tool.sh", "#!/bin/sh\necho hi\n", read_by=run)
    path.chmod(0o755)

    result = await do_edit(run, path, "echo hi", "echo bye")

    assert not result.is_error, result.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert path.read_text() == "#!/bin/sh\necho bye\n"


async def test_symlink_is_edited_through(run: Runner, worktree: Path) -> None:
    target = make(worktree / "real.txt", "value = 1\n")
    link = worktree / "link.txt"
    link.symlink_to(target.name)
    mark_read(run, link)

    result = await do_edit(run, link, "1", "2")

    assert not result.is_error, result.output
    assert link.is_symlink()
    assert target.read_text() == "value = 2\n"


# --- permission ---------------------------------------------------------------------------------


async def test_the_edit_ask_carries_the_diff(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    path = make(worktree / "src" / "m.py", "x = 1\n", read_by=run)

    result = await do_edit(run, path, "x = 1", "x = 2")

    assert not result.is_error, result.output
    (ask,) = editor.asks
    assert ask.permission == "edit"
    assert ask.patterns == ["src/m.py"]
    # "Always" covers this file by default; wider choices are offered, in words.
    assert ask.always == ["src/m.py"]
    assert [(o.id, o.patterns, o.label) for o in ask.options()] == [
        ("file", ("src/m.py",), "this file (src/m.py)"),
        ("folder", ("src/*",), "files in src/ (and its subfolders)"),
        ("extension", ("*.py",), "files matching *.py (in any folder)"),
        ("all", ("*",), "every file in the project"),
    ]
    assert [h["id"] for h in ask.metadata["hunks"]] == ["src/m.py#1"]
    assert "-x = 1\n+x = 2" in ask.metadata["diff"]
    assert ask.metadata["filepath"] == str(path)


async def test_rejected_edit_leaves_the_file(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    editor.reply = "reject"
    path = make(worktree / "f.txt", "keep me\n", read_by=run)

    result = await do_edit(run, path, "keep", "lose")

    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    assert path.read_text() == "keep me\n"


async def test_external_path_asks_external_directory(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    outside = make(worktree.parent / "elsewhere" / "f.txt", "a\n", read_by=run)

    result = await do_edit(run, outside, "a", "b")

    assert not result.is_error, result.output
    assert editor.asks[0].permission == "external_directory"
    assert editor.asks[0].patterns == [f"{outside.parent.as_posix()}/*"]
    assert outside.read_text() == "b\n"


async def test_rejected_external_path_is_not_touched(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    editor.reply = "reject"
    outside = make(worktree.parent / "elsewhere" / "f.txt", "a\n", read_by=run)

    result = await do_edit(run, outside, "a", "b")

    assert result.metadata["error"] == "permission_rejected"
    assert [a.permission for a in editor.asks] == ["external_directory"]
    assert outside.read_text() == "a\n"


# --- concurrency --------------------------------------------------------------------------------


async def test_concurrent_edits_of_one_file_both_land(run: Runner, worktree: Path) -> None:
    lines = [f"line {n}\n" for n in range(200)]
    path = make(worktree / "big.txt", "".join(lines), read_by=run)

    first, second = await asyncio.gather(
        do_edit(run, path, "line 10\n", "TEN\n"), do_edit(run, path, "line 150\n", "150!\n")
    )

    assert not first.is_error and not second.is_error, (first.output, second.output)
    text = path.read_text()
    assert "TEN\n" in text and "150!\n" in text
    assert len(text.splitlines()) == 200


async def test_unsaved_editor_buffer_is_what_gets_edited(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    # read serves the buffer's text, so the model's oldString comes from it; the disk
    # gets the agent's change on its own text, never the user's unsaved lines.
    path = make(worktree / "open.py", "a = 0\nb = 0\nc = 0\nd = 0\ne = 0\n", read_by=run)
    editor.buffers[path] = "a = 0\nb = 0\nc = 0\nd = 0\ne = 0\nunsaved = 1\n"

    result = await do_edit(run, path, "a = 0", "a = 1")

    assert not result.is_error, result.output
    assert apply_workspace_edit(editor.buffers[path], result).startswith("a = 1\nb = 0")
    assert path.read_text() == "a = 1\nb = 0\nc = 0\nd = 0\ne = 0\n"


async def test_an_edit_of_the_users_unsaved_lines_is_not_written_without_an_editor(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    path = make(worktree / "open.py", "x = 1\n", read_by=run)
    editor.buffers[path] = "x = 1\ny = 2\n"

    result = await do_edit(run, path, "y = 2", "y = 3")

    assert result.is_error
    assert "overlap your edit, and the editor cannot take edits" in result.output
    assert path.read_text() == "x = 1\n"
    # The overlap was put to the person even though the rules allow edits.
    (ask,) = editor.asks
    assert ask.metadata["unsaved"] == [{"file": "open.py", "overlaps": True, "lines": [[2, 2]]}]
    assert "overlaps your unsaved changes in open.py" in ask.title


async def test_the_read_tool_satisfies_read_before_write(
    worktree: Path, editor: RecordingEditor
) -> None:
    # The stamps read records and edit checks must agree on the path, relative or not.
    run = Runner(ToolHost(worktree, tools=[read.tool, edit.tool]), editor)
    make(worktree / "pkg" / "mod.py", "x = 1\n")

    refused = await do_edit(run, "pkg/mod.py", "x = 1", "x = 2")
    read_result = await run("read", {"filePath": "pkg/mod.py"})
    allowed = await do_edit(run, worktree / "pkg" / "mod.py", "x = 1", "x = 2")

    assert refused.is_error and "You must read file" in refused.output
    assert not read_result.is_error, read_result.output
    assert not allowed.is_error, allowed.output
    assert (worktree / "pkg" / "mod.py").read_text() == "x = 2\n"


async def test_read_before_write_can_be_switched_off_for_a_person_at_a_shell(
    worktree: Path,
) -> None:
    target = worktree / "notes.txt"
    target.write_text("alpha\n")
    shell_host = ToolHost(worktree, tools=[edit.tool], read_before_write=False)
    result = await shell_host.execute(
        "edit", {"filePath": str(target), "oldString": "alpha", "newString": "beta"}
    )
    assert not result.is_error, result.output
    assert target.read_text() == "beta\n"
