"""The apply_patch tool on real files: output, metadata, one ask, and all-or-nothing writes."""

from __future__ import annotations

import asyncio
import codecs
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.tools.helpers import ask_for_edits, make
from tools.abort import Aborted
from tools.builtin import apply_patch
from tools.changes.positions import apply_text_edits
from tools.changes.transaction import HOLD_BYTES, Transaction, TransactionFailed
from tools.config.opencode import config_from_opencode
from tools.host import ToolHost
from tools.result import ToolResult

VERIFY = "apply_patch verification failed: "
MISSING_MARKERS = "Invalid patch format: missing Begin/End markers"


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the tool under test, so these tests do not depend on the other built-ins.
    return ToolHost(worktree, tools=[apply_patch.tool])


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


async def do_patch(run: Runner, text: str) -> ToolResult:
    return await run("apply_patch", {"patchText": text})


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for directories)."""
    return {
        p.relative_to(root).as_posix(): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def apply_workspace_edit(result: ToolResult, before: dict[str, str]) -> dict[str, str]:
    """Play metadata.edit against ``before`` (uri -> text), as an editor would."""
    docs = dict(before)
    for change in result.metadata["edit"]["documentChanges"]:
        kind = change.get("kind")
        if kind == "create":
            assert change["uri"] not in docs
            docs[change["uri"]] = ""
        elif kind == "rename":
            docs[change["newUri"]] = docs.pop(change["oldUri"])
        elif kind == "delete":
            del docs[change["uri"]]
        else:
            uri = change["textDocument"]["uri"]
            docs[uri] = apply_text_edits(docs[uri], change["edits"])
    return docs


# --- the happy path: every kind of section ----------------------------------------------------


async def test_add_update_move_delete_with_exact_output_and_metadata(
    run: Runner, worktree: Path
) -> None:
    make(worktree / "src" / "app.py", "def main():\n    run()\n    return 0\n")
    make(worktree / "notes.txt", "one\ntwo\nthree\n")
    make(worktree / "old.txt", "bye\n")

    result = await do_patch(
        run,
        patch(
            "*** Add File: docs/new.md",
            "+# New",
            "+text",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def main():",
            "-    run()",
            "+    run(verbose=True)",
            "*** Update File: notes.txt",
            "@@",
            " one",
            "-two",
            "+TWO",
            "*** Delete File: old.txt",
        ),
    )

    assert not result.is_error, result.output
    expected_output = "\n".join(
        [
            "Success. Updated the following files:",
            "A docs/new.md",
            "M src/main.py",
            "M notes.txt",
            "D old.txt",
        ]
    )
    assert result.output == expected_output
    assert result.title == expected_output
    assert snapshot(worktree) == {
        "docs": None,
        "docs/new.md": b"# New\ntext\n",
        "notes.txt": b"one\nTWO\nthree\n",
        "src": None,
        "src/main.py": b"def main():\n    run(verbose=True)\n    return 0\n",
    }

    add_diff = (
        "diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n+text\n"
    )
    move_diff = (
        "diff --git a/src/app.py b/src/main.py\nrename from src/app.py\nrename to src/main.py\n"
        "--- a/src/app.py\n+++ b/src/main.py\n@@ -1,3 +1,3 @@\n def main():\n"
        "-    run()\n+    run(verbose=True)\n     return 0\n"
    )
    update_diff = (
        "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n"
        "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    )
    delete_diff = (
        "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    )
    meta = result.metadata
    assert meta["diff"] == "\n".join([add_diff, move_diff, update_diff, delete_diff])
    assert meta["files"] == [
        {
            "filePath": str(worktree / "docs" / "new.md"),
            "relativePath": "docs/new.md",
            "type": "add",
            "patch": add_diff,
            "additions": 2,
            "deletions": 0,
        },
        {
            "filePath": str(worktree / "src" / "app.py"),
            "relativePath": "src/main.py",
            "type": "move",
            "patch": move_diff,
            "additions": 1,
            "deletions": 1,
            "movePath": str(worktree / "src" / "main.py"),
        },
        {
            "filePath": str(worktree / "notes.txt"),
            "relativePath": "notes.txt",
            "type": "update",
            "patch": update_diff,
            "additions": 1,
            "deletions": 1,
        },
        {
            "filePath": str(worktree / "old.txt"),
            "relativePath": "old.txt",
            "type": "delete",
            "patch": delete_diff,
            "additions": 0,
            "deletions": 1,
        },
    ]
    assert meta["filediff"] == [
        {"file": "docs/new.md", "additions": 2, "deletions": 0},
        {"file": "src/main.py", "additions": 1, "deletions": 1},
        {"file": "notes.txt", "additions": 1, "deletions": 1},
        {"file": "old.txt", "additions": 0, "deletions": 1},
    ]


async def test_workspace_edit_has_each_operation_in_order(run: Runner, worktree: Path) -> None:
    app = make(worktree / "app.py", "a\nb\n")
    notes = make(worktree / "notes.txt", "x\n")
    old = make(worktree / "old.txt", "bye\n")
    new, moved = worktree / "new.txt", worktree / "lib" / "app.py"

    result = await do_patch(
        run,
        patch(
            "*** Add File: new.txt",
            "+hello",
            "*** Update File: app.py",
            "*** Move to: lib/app.py",
            "@@",
            "-b",
            "+B",
            "*** Update File: notes.txt",
            "@@",
            "-x",
            "+y",
            "*** Delete File: old.txt",
        ),
    )

    assert not result.is_error, result.output
    changes = result.metadata["edit"]["documentChanges"]
    shapes = [c.get("kind") or ("edit", c["textDocument"]["uri"]) for c in changes]
    assert shapes == [
        "create",
        ("edit", new.as_uri()),
        "rename",
        ("edit", moved.as_uri()),
        ("edit", notes.as_uri()),
        "delete",
    ]
    assert changes[0] == {
        "kind": "create",
        "uri": new.as_uri(),
        "options": {"overwrite": False, "ignoreIfExists": True},
    }
    assert changes[2] == {"kind": "rename", "oldUri": app.as_uri(), "newUri": moved.as_uri()}
    assert changes[5] == {"kind": "delete", "uri": old.as_uri()}
    # Played against the old texts, the edit produces exactly what is on disk now.
    before = {app.as_uri(): "a\nb\n", notes.as_uri(): "x\n", old.as_uri(): "bye\n"}
    assert apply_workspace_edit(result, before) == {
        new.as_uri(): new.read_text(),
        moved.as_uri(): moved.read_text(),
        notes.as_uri(): notes.read_text(),
    }


async def test_relative_and_absolute_paths(run: Runner, worktree: Path) -> None:
    a = make(worktree / "a.txt", "a\n")

    result = await do_patch(
        run, patch(f"*** Update File: {a}", "@@", "-a", "+A", "*** Add File: sub/b.txt", "+b")
    )

    assert not result.is_error, result.output
    assert result.output.splitlines()[1:] == ["M a.txt", "A sub/b.txt"]
    assert a.read_text() == "A\n"
    assert (worktree / "sub" / "b.txt").read_text() == "b\n"


async def test_heredoc_wrapped_patch(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "old\n")

    result = await do_patch(
        run, "cat <<'EOF'\n" + patch("*** Update File: a.txt", "@@", "-old", "+new") + "\nEOF"
    )

    assert not result.is_error, result.output
    assert path.read_text() == "new\n"


async def test_sections_for_one_file_compose_in_order(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "one\ntwo\n")

    result = await do_patch(
        run,
        patch(
            "*** Update File: a.txt",
            "@@",
            "-one",
            "+1",
            "*** Update File: a.txt",
            "@@",
            "-two",
            "+2",
            "*** Add File: b.txt",
            "+b",
            "*** Update File: b.txt",
            "@@",
            "-b",
            "+B",
        ),
    )

    assert not result.is_error, result.output
    assert path.read_text() == "1\n2\n"
    assert (worktree / "b.txt").read_text() == "B\n"
    assert result.output.splitlines()[1:] == ["M a.txt", "M a.txt", "A b.txt", "M b.txt"]


async def test_add_over_an_existing_file_replaces_it(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "old\n")

    result = await do_patch(run, patch("*** Add File: a.txt", "+new"))

    assert not result.is_error, result.output
    assert path.read_text() == "new\n"
    assert result.metadata["files"][0]["type"] == "add"
    assert result.metadata["filediff"] == [{"file": "a.txt", "additions": 1, "deletions": 1}]
    # An existing file is edited in place, not created.
    (change,) = result.metadata["edit"]["documentChanges"]
    assert apply_text_edits("old\n", change["edits"]) == "new\n"


async def test_move_onto_an_existing_file_overwrites_it(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt", "a\n")
    dest = make(worktree / "b.txt", "b\n")

    result = await do_patch(
        run, patch("*** Update File: a.txt", "*** Move to: b.txt", "@@", "-a", "+A")
    )

    assert not result.is_error, result.output
    assert snapshot(worktree) == {"b.txt": b"A\n"}
    rename = result.metadata["edit"]["documentChanges"][0]
    assert rename["newUri"] == dest.as_uri() and rename["options"] == {"overwrite": True}


async def test_a_move_without_changes_is_a_pure_rename(run: Runner, worktree: Path) -> None:
    src = make(worktree / "a.txt", b"same\r\n")
    dest = worktree / "sub" / "b.txt"

    result = await do_patch(run, patch("*** Update File: a.txt", "*** Move to: sub/b.txt"))

    assert not result.is_error, result.output
    assert result.output.splitlines()[1:] == ["M sub/b.txt"]
    assert dest.read_bytes() == b"same\r\n" and not src.exists()
    assert result.metadata["diff"] == (
        "diff --git a/a.txt b/sub/b.txt\nsimilarity index 100%\n"
        "rename from a.txt\nrename to sub/b.txt\n"
    )
    assert result.metadata["edit"]["documentChanges"] == [
        {"kind": "rename", "oldUri": src.as_uri(), "newUri": dest.as_uri()}
    ]


async def test_insertion_only_chunk_appends_at_the_end(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.py", "def f():\n    pass\n")

    result = await do_patch(run, patch("*** Update File: a.py", "@@ def f():", "+x = 1"))

    assert not result.is_error, result.output
    assert path.read_text() == "def f():\n    pass\nx = 1\n"


async def test_unicode_punctuation_in_the_file_is_matched_by_ascii(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "msg.py", "greet = “hello” — friend\nkeep = ‘x’\n")

    result = await do_patch(
        run,
        patch("*** Update File: msg.py", "@@", '-greet = "hello" - friend', '+greet = "hi"'),
    )

    assert not result.is_error, result.output
    assert path.read_text() == 'greet = "hi"\nkeep = ‘x’\n'


async def test_read_stamps_are_recorded(run: Runner, worktree: Path) -> None:
    a = make(worktree / "a.txt", "a\n")
    gone = make(worktree / "gone.txt", "g\n")
    session = run.host.sessions.get(run.session_id)
    session.record_read(gone)

    result = await do_patch(
        run,
        patch("*** Update File: a.txt", "@@", "-a", "+b", "*** Delete File: gone.txt"),
    )

    assert not result.is_error, result.output
    assert session.read_stamps[str(a)] == a.stat().st_mtime_ns
    assert str(gone) not in session.read_stamps
    session.assert_fresh(a)  # the next edit needs no re-read


# --- what survives a patch ----------------------------------------------------------------------


async def test_crlf_file_stays_crlf(run: Runner, worktree: Path) -> None:
    path = make(worktree / "w.txt", b"one\r\ntwo\r\nthree\r\n")

    result = await do_patch(
        run, patch("*** Update File: w.txt", "@@", " one", "-two", "+2", "+2b", " three")
    )

    assert not result.is_error, result.output
    assert path.read_bytes() == b"one\r\n2\r\n2b\r\nthree\r\n"
    (change,) = result.metadata["edit"]["documentChanges"]
    assert apply_text_edits("one\r\ntwo\r\nthree\r\n", change["edits"]) == (
        path.read_bytes().decode()
    )


async def test_lf_file_stays_lf_under_a_crlf_patch(run: Runner, worktree: Path) -> None:
    path = make(worktree / "u.txt", b"one\ntwo\n")
    text = patch("*** Update File: u.txt", "@@", " one", "-two", "+2").replace("\n", "\r\n")

    result = await do_patch(run, text)

    assert not result.is_error, result.output
    assert path.read_bytes() == b"one\n2\n"


async def test_bom_and_mode_are_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "run.sh", codecs.BOM_UTF8 + b"echo hi\n")
    path.chmod(0o751)
    wide = make(worktree / "w.txt", codecs.BOM_UTF16_LE + "a\r\nb\r\n".encode("utf-16-le"))

    result = await do_patch(
        run,
        patch(
            "*** Update File: run.sh",
            "@@",
            "-echo hi",
            "+echo bye",
            "*** Update File: w.txt",
            "*** Move to: moved.txt",
            "@@",
            "-b",
            "+B",
        ),
    )

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"echo bye\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert not wide.exists()
    moved = worktree / "moved.txt"
    assert moved.read_bytes() == codecs.BOM_UTF16_LE + "a\r\nB\r\n".encode("utf-16-le")


async def test_an_added_bom_becomes_a_byte_order_mark(run: Runner, worktree: Path) -> None:
    result = await do_patch(run, patch("*** Add File: b.txt", "+\ufeffhello"))

    assert not result.is_error, result.output
    assert (worktree / "b.txt").read_bytes() == codecs.BOM_UTF8 + b"hello\n"


async def test_text_the_encoding_cannot_hold_is_refused_before_writing(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "l1.txt", "caf\xe9\n".encode("latin-1"))
    other = make(worktree / "ok.txt", "ok\n")

    result = await do_patch(
        run,
        patch(
            "*** Update File: ok.txt",
            "@@",
            "-ok",
            "+fine",
            "*** Update File: l1.txt",
            "@@",
            "-café",
            "+costs 5 €",
        ),
    )

    assert result.is_error
    assert result.output == (
        f"{VERIFY}{path} is encoded as latin-1, which cannot represent '€' (U+20AC) in the new "
        "text. Nothing was written. Use only characters that latin-1 can encode."
    )
    assert path.read_bytes() == "caf\xe9\n".encode("latin-1")
    assert other.read_text() == "ok\n"


# --- permission: one ask for the whole patch ----------------------------------------------------


async def test_one_edit_ask_for_the_whole_patch(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    make(worktree / "a.py", "    x = 1\n")
    make(worktree / "b.py", "b\n")
    make(worktree / "c.py", "c\n")

    result = await do_patch(
        run,
        patch(
            "*** Update File: a.py",
            "@@",
            "-    x = 1",
            "+    x = 2",
            "*** Update File: b.py",
            "*** Move to: lib/b.py",
            "@@",
            "-b",
            "+B",
            "*** Delete File: c.py",
            "*** Add File: d.py",
            "+d",
        ),
    )

    assert not result.is_error, result.output
    (ask,) = editor.asks
    assert ask.permission == "edit"
    assert ask.patterns == ["a.py", "b.py", "c.py", "d.py", "lib/b.py"]
    assert ask.always == ["a.py", "b.py", "c.py", "d.py", "lib/b.py"]
    assert ask.metadata["filepath"] == "a.py, b.py, c.py, d.py, lib/b.py"
    assert ask.metadata["files"] == result.metadata["files"]
    # The ask shows trimmed diffs: the common indentation of a.py's lines is gone.
    assert "-x = 1\n+x = 2\n" in ask.metadata["diff"]
    assert "+    x = 2" in result.metadata["diff"]
    for name in ("b.py", "c.py", "d.py"):
        assert f"a/{name}" in ask.metadata["diff"] or f"b/{name}" in ask.metadata["diff"]


async def test_rejected_patch_changes_nothing(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    editor.reply = "reject"
    make(worktree / "a.txt", "a\n")
    make(worktree / "gone.txt", "g\n")
    before = snapshot(worktree)

    result = await do_patch(
        run,
        patch(
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+A",
            "*** Delete File: gone.txt",
            "*** Add File: new/n.txt",
            "+n",
        ),
    )

    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    assert len(editor.asks) == 1
    assert snapshot(worktree) == before


async def test_a_denied_move_destination_blocks_the_patch(
    run: Runner, host: ToolHost, worktree: Path
) -> None:
    host.set_config(
        config_from_opencode({"permission": {"edit": {"*": "deny", "plans/*": "allow"}}})
    )
    make(worktree / "plans" / "p.md", "plan\n")
    before = snapshot(worktree)

    result = await do_patch(
        run,
        patch("*** Update File: plans/p.md", "*** Move to: src/main.py", "@@", "-plan", "+code"),
    )

    assert result.is_error
    assert result.metadata["error"] == "permission_denied"
    assert snapshot(worktree) == before


async def test_paths_outside_the_project_ask_external_directory(
    run: Runner, editor: RecordingEditor, worktree: Path, tmp_path: Path
) -> None:
    outside = make(tmp_path / "elsewhere" / "x.txt", "x\n")
    target = tmp_path / "away" / "y.txt"

    result = await do_patch(
        run,
        patch(f"*** Update File: {outside}", f"*** Move to: {target}", "@@", "-x", "+y"),
    )

    assert not result.is_error, result.output
    external = [a for a in editor.asks if a.permission == "external_directory"]
    assert [a.patterns for a in external] == [
        [f"{outside.parent.as_posix()}/*"],
        [f"{target.parent.as_posix()}/*"],
    ]
    assert target.read_text() == "y\n"
    assert not outside.exists()


async def test_rejected_external_directory_reads_nothing_and_writes_nothing(
    run: Runner, editor: RecordingEditor, worktree: Path, tmp_path: Path
) -> None:
    editor.reply = "reject"
    inside = make(worktree / "a.txt", "a\n")

    result = await do_patch(
        run,
        patch(
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+A",
            f"*** Add File: {tmp_path / 'out.txt'}",
            "+x",
        ),
    )

    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    assert [a.permission for a in editor.asks] == ["external_directory"]
    assert inside.read_text() == "a\n"
    assert not (tmp_path / "out.txt").exists()


# --- errors: OpenCode's messages, and nothing touched ------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "patchText is required"),
        (
            "*** Update File: a.txt",
            f"{VERIFY}Error: Invalid patch format: missing Begin/End markers",
        ),
        ("*** Begin Patch\n*** End Patch", "patch rejected: empty patch"),
        (" *** Begin Patch\r\n*** End Patch\r\n", "patch rejected: empty patch"),
        (patch("*** Frobnicate File: a.txt"), f"{VERIFY}no hunks found"),
        (patch("some prose"), f"{VERIFY}no hunks found"),
    ],
)
async def test_patch_level_errors(run: Runner, worktree: Path, text: str, message: str) -> None:
    result = await do_patch(run, text)

    assert result.is_error
    assert result.output == message
    assert result.metadata["error"] == "failed"


async def test_missing_patch_text_is_invalid_arguments(run: Runner) -> None:
    result = await run("apply_patch", {})

    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert "patchText" in result.output


async def test_update_of_a_missing_file(run: Runner, worktree: Path) -> None:
    result = await do_patch(run, patch("*** Update File: nope.txt", "@@", "-a", "+b"))

    assert result.output == f"{VERIFY}Failed to read file to update: {worktree / 'nope.txt'}"


async def test_update_of_a_directory(run: Runner, worktree: Path) -> None:
    (worktree / "dir").mkdir()

    result = await do_patch(run, patch("*** Update File: dir", "@@", "-a", "+b"))

    assert result.output == f"{VERIFY}Failed to read file to update: {worktree / 'dir'}"


async def test_delete_of_a_missing_file(run: Runner, worktree: Path) -> None:
    result = await do_patch(run, patch("*** Delete File: nope.txt"))

    assert result.output == (
        f"{VERIFY}ENOENT: no such file or directory, open '{worktree / 'nope.txt'}'"
    )


async def test_delete_of_a_directory(run: Runner, worktree: Path) -> None:
    (worktree / "dir").mkdir()

    result = await do_patch(run, patch("*** Delete File: dir"))

    assert result.output == f"{VERIFY}EISDIR: illegal operation on a directory, read"
    assert (worktree / "dir").is_dir()


async def test_deleting_a_file_twice_fails(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "a\n")

    result = await do_patch(run, patch("*** Delete File: a.txt", "*** Delete File: a.txt"))

    assert result.output == f"{VERIFY}ENOENT: no such file or directory, open '{path}'"
    assert path.read_text() == "a\n"


async def test_missing_context(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.py", "x = 1\n")

    result = await do_patch(run, patch("*** Update File: a.py", "@@ def gone():", "-x = 1"))

    assert result.output == f"{VERIFY}Error: Failed to find context 'def gone():' in {path}"


async def test_missing_lines(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.py", "x = 1\n")

    result = await do_patch(run, patch("*** Update File: a.py", "@@", " x = 1", "-y = 2", "+y = 3"))

    assert result.output == (
        f"{VERIFY}Error: Failed to find expected lines in {path}:\nx = 1\ny = 2"
    )


async def test_add_onto_a_directory_is_refused(run: Runner, worktree: Path) -> None:
    (worktree / "dir").mkdir()

    result = await do_patch(run, patch("*** Add File: dir", "+x"))

    assert result.output == f"{VERIFY}Failed to add {worktree / 'dir'}: a directory is in the way"


async def test_move_onto_a_directory_is_refused(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "a\n")
    (worktree / "dir").mkdir()

    result = await do_patch(run, patch("*** Update File: a.txt", "*** Move to: dir", "@@", "-a"))

    assert result.output == (
        f"{VERIFY}Failed to move {path} to {worktree / 'dir'}: a directory is in the way"
    )
    assert path.read_text() == "a\n"


async def test_a_late_verification_failure_touches_nothing(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    make(worktree / "a.txt", "a\n")
    make(worktree / "gone.txt", "g\n")
    before = snapshot(worktree)
    mtime = (worktree / "a.txt").stat().st_mtime_ns

    result = await do_patch(
        run,
        patch(
            "*** Add File: new/n.txt",
            "+n",
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+A",
            "*** Delete File: gone.txt",
            "*** Update File: a.txt",
            "@@",
            "-not there",
            "+x",
        ),
    )

    assert result.is_error
    assert result.output.startswith(f"{VERIFY}Error: Failed to find expected lines in ")
    assert editor.asks == []  # nothing to ask about: verification comes first
    assert snapshot(worktree) == before
    assert (worktree / "a.txt").stat().st_mtime_ns == mtime


# --- writing: all files or none -------------------------------------------------------------------


async def test_failure_part_way_restores_every_file(
    run: Runner, worktree: Path, editor: RecordingEditor
) -> None:
    a = make(worktree / "a.txt", b"alpha\r\n")
    b = make(worktree / "b.txt", codecs.BOM_UTF8 + b"beta\n")
    b.chmod(0o640)
    gone = make(worktree / "gone.txt", "bye\n")
    blocker = make(worktree / "blocker", "I am a file\n")
    before = snapshot(worktree)
    a_mode = stat.S_IMODE(a.stat().st_mode)

    result = await do_patch(
        run,
        patch(
            "*** Update File: a.txt",
            "@@",
            "-alpha",
            "+ALPHA",
            "*** Update File: b.txt",
            "@@",
            "-beta",
            "+BETA",
            "*** Add File: fresh/dir/new.txt",
            "+new",
            "*** Delete File: gone.txt",
            # Its parent is a regular file, so creating it fails after the others are written.
            "*** Add File: blocker/c.txt",
            "+c",
        ),
    )

    assert result.is_error
    assert result.metadata["error"] == "failed"
    target = worktree / "blocker" / "c.txt"
    assert result.output == (
        f"Failed to apply the patch: could not write {target}: {blocker} is a file, not a "
        "directory. The files already changed were restored (a.txt, b.txt, fresh/dir/new.txt), "
        "so no file was changed. Fix the cause and send the whole patch again."
    )
    assert snapshot(worktree) == before  # fresh/ and fresh/dir/ are gone again
    assert stat.S_IMODE(b.stat().st_mode) == 0o640
    assert stat.S_IMODE(a.stat().st_mode) == a_mode
    assert gone.exists()


async def test_session_stamps_are_untouched_after_a_rollback(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt", "a\n")
    make(worktree / "blocker", "file\n")
    session = run.host.sessions.get(run.session_id)

    result = await do_patch(
        run, patch("*** Update File: a.txt", "@@", "-a", "+A", "*** Add File: blocker/x", "+x")
    )

    assert result.is_error
    assert session.read_stamps == {}


async def test_concurrent_patches_to_one_file_both_land(run: Runner, worktree: Path) -> None:
    path = make(worktree / "a.txt", "".join(f"line {n}\n" for n in range(20)))

    first, second = await asyncio.gather(
        do_patch(run, patch("*** Update File: a.txt", "@@", "-line 1", "+ONE")),
        do_patch(run, patch("*** Update File: a.txt", "@@", "-line 18", "+EIGHTEEN")),
    )

    assert not first.is_error and not second.is_error
    text = path.read_text()
    assert "ONE\n" in text and "EIGHTEEN\n" in text


# --- the transaction on its own -------------------------------------------------------------------


def test_transaction_restores_deleted_files_links_and_modes(tmp_path: Path) -> None:
    plain = make(tmp_path / "plain.txt", "plain\n")
    plain.chmod(0o600)
    target = make(tmp_path / "target.txt", "target\n")
    link = tmp_path / "link.txt"
    link.symlink_to("target.txt")
    before = snapshot(tmp_path)

    transaction = Transaction()
    transaction.write(plain, b"changed\n")
    transaction.delete(link)
    transaction.write(tmp_path / "new" / "deep" / "n.txt", b"n\n")
    transaction.delete(tmp_path / "missing.txt")  # fails last

    with pytest.raises(TransactionFailed) as caught:
        transaction.commit()

    error = caught.value
    assert error.action == "delete" and error.path == tmp_path / "missing.txt"
    assert error.reason == "No such file or directory"
    assert error.restored == [plain, link, tmp_path / "new" / "deep" / "n.txt"]
    assert error.unrestored == []
    assert snapshot(tmp_path) == before
    assert os.readlink(link) == "target.txt"
    assert stat.S_IMODE(plain.stat().st_mode) == 0o600
    assert target.read_text() == "target\n"


def test_transaction_writes_through_a_symlink_and_restores_its_target(tmp_path: Path) -> None:
    target = make(tmp_path / "real.txt", "real\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)

    transaction = Transaction()
    transaction.write(link, b"through\n")
    transaction.write(tmp_path / "dir", b"x")
    (tmp_path / "dir").mkdir()

    with pytest.raises(TransactionFailed) as caught:
        transaction.commit()

    assert caught.value.path == tmp_path / "dir"
    assert caught.value.restored == [target]
    assert link.is_symlink() and target.read_text() == "real\n"


def test_transaction_rolls_back_when_aborted(tmp_path: Path) -> None:
    first = make(tmp_path / "first.txt", "1\n")
    steps = 0

    def check() -> None:
        nonlocal steps
        steps += 1
        if steps == 2:
            raise Aborted()

    transaction = Transaction(check)
    transaction.write(first, b"one\n")
    transaction.write(tmp_path / "second.txt", b"two\n")

    with pytest.raises(Aborted):
        transaction.commit()

    assert first.read_text() == "1\n"
    assert not (tmp_path / "second.txt").exists()


def test_a_rolled_back_file_gets_its_old_timestamp_back(tmp_path: Path) -> None:
    """An editor holding the file unsaved compares timestamps on its next save: a write
    taken back must not look like a change (Neovim asks "changed since reading it")."""
    path = make(tmp_path / "held.txt", "held\n")
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    transaction = Transaction()
    transaction.write(path, b"agent\n")
    transaction.commit()
    assert path.stat().st_mtime_ns != 2_000_000_000

    transaction.rollback()

    assert path.read_text() == "held\n"
    assert path.stat().st_mtime_ns == 2_000_000_000


def test_a_big_file_is_put_back_from_its_old_inode_held_open(tmp_path: Path) -> None:
    """A big file is not read before the change: its old inode is held open (the rename
    leaves it as it was) and read only to put it back; ``close`` lets go of it."""
    text = "".join(f"line {n}\n" for n in range(HOLD_BYTES // 8))
    big = make(tmp_path / "big.txt", text)
    other = make(tmp_path / "other.txt", "o\n")
    fds = len(os.listdir("/proc/self/fd"))
    transaction = Transaction()
    transaction.write(big, b"new\n")
    transaction.write(tmp_path / "dir", b"x")
    (tmp_path / "dir").mkdir()
    with pytest.raises(TransactionFailed) as caught:  # the second step fails: put back
        transaction.commit()
    assert caught.value.restored == [big] and big.read_text() == text
    assert len(os.listdir("/proc/self/fd")) == fds

    transaction = Transaction()
    transaction.write(big, b"new\n")
    transaction.write(other, b"O\n")
    transaction.commit()
    assert big.read_bytes() == b"new\n" and len(os.listdir("/proc/self/fd")) == fds + 1
    assert transaction.rollback() == ([big, other], [])  # a later step of the change failed
    assert big.read_text() == text and other.read_text() == "o\n"
    transaction.close()
    assert len(os.listdir("/proc/self/fd")) == fds


def test_transaction_commits_everything(tmp_path: Path) -> None:
    keep = make(tmp_path / "keep.txt", "k\n")
    gone = make(tmp_path / "gone.txt", "g\n")

    transaction = Transaction()
    transaction.write(keep, b"K\n")
    transaction.write(tmp_path / "a" / "new.txt", b"n\n")
    transaction.delete(gone)
    transaction.commit()

    assert snapshot(tmp_path) == {"a": None, "a/new.txt": b"n\n", "keep.txt": b"K\n"}
    assert transaction.touched == [keep, tmp_path / "a" / "new.txt", gone]
