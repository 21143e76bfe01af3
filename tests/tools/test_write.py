"""The write tool on real files: creation, read-before-write, and what a rewrite keeps."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.tools.helpers import ask_for_edits, make, mark_read
from tools.builtin import edit, multiedit, write
from tools.changes import transaction
from tools.changes.positions import apply_text_edits
from tools.host import ToolHost
from tools.result import ToolResult


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the tools under test, so these tests do not depend on the other built-ins.
    return ToolHost(worktree, tools=[write.tool, edit.tool, multiedit.tool])


async def do_write(run: Runner, path: Path | str, content: str) -> ToolResult:
    return await run("write", {"filePath": str(path), "content": content})


async def test_creates_file_and_parents(run: Runner, worktree: Path) -> None:
    path = worktree / "a" / "b" / "new.txt"

    result = await do_write(run, path, "hello\nworld\n")

    assert not result.is_error, result.output
    assert result.output == "Wrote file successfully."
    assert result.title == "a/b/new.txt"
    assert path.read_text() == "hello\nworld\n"
    meta = result.metadata
    assert meta["filepath"] == str(path)
    assert meta["exists"] is False
    assert "new file mode" in meta["diff"] and "+++ b/a/b/new.txt" in meta["diff"]
    assert meta["filediff"] == [{"file": "a/b/new.txt", "additions": 2, "deletions": 0}]
    changes = meta["edit"]["documentChanges"]
    assert changes[0] == {
        "kind": "create",
        "uri": path.as_uri(),
        "options": {"overwrite": False, "ignoreIfExists": True},
    }
    assert apply_text_edits("", changes[1]["edits"]) == "hello\nworld\n"


async def test_relative_path_resolves_against_the_project(run: Runner, worktree: Path) -> None:
    result = await do_write(run, "rel.txt", "x\n")

    assert not result.is_error, result.output
    assert (worktree / "rel.txt").read_text() == "x\n"


async def test_overwrite_requires_a_read_first(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "original\n")

    result = await do_write(run, path, "replaced\n")

    assert result.is_error
    assert result.output == (
        f"You must read file {path} before overwriting it. Use the Read tool first"
    )
    assert path.read_text() == "original\n"


async def test_overwrite_after_read(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "one\ntwo\n", read_by=run)

    result = await do_write(run, path, "one\n2\n")

    assert not result.is_error, result.output
    assert path.read_text() == "one\n2\n"
    assert result.metadata["exists"] is True
    assert "-two\n+2\n" in result.metadata["diff"]
    edits = result.metadata["edit"]["documentChanges"][0]["edits"]
    assert apply_text_edits("one\ntwo\n", edits) == "one\n2\n"


async def test_a_created_file_can_be_rewritten_without_a_read(run: Runner, worktree: Path) -> None:
    path = worktree / "f.txt"

    assert not (await do_write(run, path, "v1\n")).is_error
    result = await do_write(run, path, "v2\n")

    assert not result.is_error, result.output
    assert path.read_text() == "v2\n"


async def test_modified_since_read_is_refused(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "original\n", read_by=run)
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))

    result = await do_write(run, path, "replaced\n")

    assert result.is_error
    assert result.output.startswith(f"File {path} has been modified since it was last read.")
    assert "\nLast modification: " in result.output and "\nLast read: " in result.output
    assert path.read_text() == "original\n"


async def test_existing_bom_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", codecs.BOM_UTF8 + b"old\n", read_by=run)

    result = await do_write(run, path, "new\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"new\n"
    # The content's BOM state (none) differed from the file's; the file's won.
    assert result.metadata["bomDiscarded"] is True


async def test_existing_bom_with_bom_in_content_is_not_doubled(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", codecs.BOM_UTF8 + b"old\n", read_by=run)

    result = await do_write(run, path, "\ufeffnew\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"new\n"
    assert "bomDiscarded" not in result.metadata


async def test_new_file_keeps_the_bom_its_content_starts_with(run: Runner, worktree: Path) -> None:
    # OpenCode 1.18.33: a new file is written with the BOM the content starts with.
    path = worktree / "f.txt"

    result = await do_write(run, path, "\ufeffhello\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF8 + b"hello\n"
    assert "bomDiscarded" not in result.metadata
    assert "+hello" in result.metadata["diff"]  # the diff shows text, not the BOM


async def test_bom_in_content_is_not_adopted_by_an_existing_file(
    run: Runner, worktree: Path
) -> None:
    path = make(worktree / "f.txt", b"old\n", read_by=run)

    result = await do_write(run, path, "\ufeffhello\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == b"hello\n"
    assert result.metadata["bomDiscarded"] is True


async def test_utf16_encoding_is_kept(run: Runner, worktree: Path) -> None:
    data = codecs.BOM_UTF16_BE + "alt\n".encode("utf-16-be")
    path = make(worktree / "wide.txt", data, read_by=run)

    result = await do_write(run, path, "neü\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == codecs.BOM_UTF16_BE + "neü\n".encode("utf-16-be")


async def test_latin1_encoding_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "f.txt", "café\n".encode("latin-1"), read_by=run)

    result = await do_write(run, path, "crème\n")

    assert not result.is_error, result.output
    assert path.read_bytes() == "crème\n".encode("latin-1")


async def test_content_the_encoding_cannot_hold_is_refused(run: Runner, worktree: Path) -> None:
    data = "café\n".encode("latin-1")
    path = make(worktree / "f.txt", data, read_by=run)

    result = await do_write(run, path, "emoji 🙂\n")

    assert result.is_error
    assert "latin-1" in result.output and "U+1F642" in result.output
    assert path.read_bytes() == data


async def test_executable_mode_is_kept(run: Runner, worktree: Path) -> None:
    path = make(worktree / "run.sh", "#!/bin/sh\n", read_by=run)
    path.chmod(0o755)

    result = await do_write(run, path, "#!/bin/sh\necho hi\n")

    assert not result.is_error, result.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


async def test_symlink_is_written_through(run: Runner, worktree: Path) -> None:
    target = make(worktree / "real.txt", "old\n")
    link = worktree / "link.txt"
    link.symlink_to(target.name)
    mark_read(run, link)

    result = await do_write(run, link, "new\n")

    assert not result.is_error, result.output
    assert link.is_symlink()
    assert target.read_text() == "new\n"


async def test_directory_path_fails_clearly(run: Runner, worktree: Path) -> None:
    (worktree / "pkg").mkdir()

    result = await do_write(run, worktree / "pkg", "x")

    assert result.is_error
    assert result.output == f"Path is a directory, not a file: {worktree / 'pkg'}"
    assert (worktree / "pkg").is_dir()


async def test_parent_that_is_a_file_fails_clearly(run: Runner, worktree: Path) -> None:
    make(worktree / "plain", "i am a file\n")

    result = await do_write(run, worktree / "plain" / "child.txt", "x")

    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.output == (
        f"Cannot create {worktree / 'plain' / 'child.txt'}: "
        f"{worktree / 'plain'} is a file, not a directory."
    )
    assert (worktree / "plain").read_text() == "i am a file\n"


async def test_empty_file_path_is_required(run: Runner) -> None:
    result = await do_write(run, "", "x")

    assert result.is_error
    assert result.output == "filePath is required"


async def test_the_edit_ask_carries_the_diff(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)

    result = await do_write(run, worktree / "docs" / "n.md", "# Title\n")

    assert not result.is_error, result.output
    (ask,) = editor.asks
    assert (ask.tool, ask.permission, ask.patterns) == ("write", "edit", ["docs/n.md"])
    assert "+# Title" in ask.metadata["diff"]


async def test_rejected_write_creates_nothing(
    run: Runner, host: ToolHost, editor: RecordingEditor, worktree: Path
) -> None:
    ask_for_edits(host)
    editor.reply = "reject"
    existing = make(worktree / "keep.txt", "keep\n", read_by=run)

    created = await do_write(run, worktree / "new" / "f.txt", "x")
    replaced = await do_write(run, existing, "gone\n")

    assert created.metadata["error"] == replaced.metadata["error"] == "permission_rejected"
    assert not (worktree / "new" / "f.txt").exists()
    assert existing.read_text() == "keep\n"


async def test_external_path_asks_external_directory(
    run: Runner, editor: RecordingEditor, worktree: Path
) -> None:
    outside = worktree.parent / "outside" / "f.txt"

    result = await do_write(run, outside, "x\n")

    assert not result.is_error, result.output
    assert editor.asks[0].permission == "external_directory"
    assert editor.asks[0].metadata["parentDir"] == str(outside.parent)
    assert outside.read_text() == "x\n"


async def test_name_too_long_fails_clearly(run: Runner, worktree: Path) -> None:
    path = worktree / ("n" * 300)

    result = await do_write(run, path, "x")

    assert result.is_error  # caught with the arguments, before any file system call
    assert result.metadata["error"] == "invalid_arguments"
    assert "- filePath: has a file or folder name of 300 bytes" in result.output


async def test_special_file_is_refused(run: Runner, worktree: Path) -> None:
    fifo = worktree / "pipe"
    os.mkfifo(fifo)
    mark_read(run, fifo)

    result = await do_write(run, fifo, "x")

    assert result.is_error
    assert result.output == f"Not a regular file: {fifo}"


def full_disk(path: Path, data: bytes, mode: int | None = None, **_: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


async def test_write_failure_is_reported(
    host: ToolHost, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = worktree / "f.txt"
    monkeypatch.setattr(transaction, "atomic_write", full_disk)

    result = await host.execute("write", {"filePath": str(path), "content": "x"})

    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.output == (
        f"Could not write {path}: No space left on device. The file was not changed."
    )
    assert not path.exists()
