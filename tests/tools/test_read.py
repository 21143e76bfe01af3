"""The read tool (reference §6.1): pages, footers, directories, media, permissions, streaming."""

from __future__ import annotations

import base64
import os
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import RecordingEditor
from tools.abort import Aborted, AbortSignal
from tools.builtin import read
from tools.fsio import pages
from tools.host import ToolHost
from tools.permission.asks import PermissionReply, PermissionRequest


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the read tool, so these tests do not depend on the other tools' modules.
    return ToolHost(worktree, tools=[read.tool])


def tiny_png() -> bytes:
    """A real 1x1 RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def numbered(count: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, count + 1))


def repeat_lines(path: Path, size: int) -> Path:
    """``numbered(1000)`` written again and again, up to ``size`` bytes (whole blocks only)."""
    block = numbered(1000).encode()
    with path.open("wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)
    return path


def file_output(path: Path, body: str, footer: str) -> str:
    return f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n\n{footer}\n</content>"


# --- pages and footers ------------------------------------------------------------------


async def test_whole_file_ends_with_the_total(run, worktree: Path) -> None:
    path = worktree / "src" / "a.py"
    path.parent.mkdir()
    path.write_text("one\ntwo\nthree\n")
    result = await run("read", {"filePath": str(path)})
    assert not result.is_error
    assert result.output == file_output(
        path, "1: one\n2: two\n3: three", "(End of file - total 3 lines)"
    )
    assert result.title == "src/a.py"
    assert result.metadata == {"preview": "one\ntwo\nthree", "truncated": False, "loaded": []}
    assert result.attachments == []


async def test_relative_path_resolves_against_the_project_directory(run, worktree: Path) -> None:
    (worktree / "notes.txt").write_text("hello")
    result = await run("read", {"filePath": "notes.txt"})
    assert result.output == file_output(
        worktree / "notes.txt", "1: hello", "(End of file - total 1 lines)"
    )


async def test_offset_and_limit_page_through_the_file(run, worktree: Path) -> None:
    path = worktree / "five.txt"
    path.write_text(numbered(5))
    result = await run("read", {"filePath": str(path), "offset": 2, "limit": 2})
    assert result.output == file_output(
        path, "2: line 2\n3: line 3", "(Showing lines 2-3 of 5. Use offset=4 to continue.)"
    )
    assert result.metadata["truncated"] is True
    assert result.metadata["preview"] == "line 2\nline 3"

    last = await run("read", {"filePath": str(path), "offset": 4, "limit": 2})
    assert last.output == file_output(path, "4: line 4\n5: line 5", "(End of file - total 5 lines)")
    assert last.metadata["truncated"] is False


async def test_default_limit_is_2000_lines_and_preview_is_20(run, worktree: Path) -> None:
    path = worktree / "long.txt"
    path.write_text(numbered(2500))
    result = await run("read", {"filePath": str(path)})
    assert result.output.endswith(
        "2000: line 2000\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)"
        "\n</content>"
    )
    assert "2001: " not in result.output
    assert result.metadata["preview"] == "\n".join(f"line {i}" for i in range(1, 21))


async def test_offset_given_as_a_string_is_accepted(run, worktree: Path) -> None:
    path = worktree / "five.txt"
    path.write_text(numbered(5))
    result = await run("read", {"filePath": str(path), "offset": "5"})
    assert "5: line 5\n\n(End of file - total 5 lines)" in result.output


async def test_offset_zero_reads_from_the_first_line(run, worktree: Path) -> None:
    # OpenCode 1.18.33 accepts 0 and treats it as 1.
    (worktree / "a.txt").write_text("a\nb\n")
    result = await run("read", {"filePath": "a.txt", "offset": 0})
    assert not result.is_error, result.output
    assert "1: a\n2: b\n\n(End of file - total 2 lines)" in result.output


@pytest.mark.parametrize(("field", "value", "least"), [("offset", -1, 0), ("limit", 0, 1)])
async def test_negative_offset_or_zero_limit_is_rejected_by_the_schema(
    run, worktree: Path, field: str, value: int, least: int
) -> None:
    (worktree / "a.txt").write_text("a\n")
    result = await run("read", {"filePath": "a.txt", field: value})
    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert f"- {field}: input should be greater than or equal to {least} (got {value})" in (
        result.output
    )


# --- instruction files (AGENTS.md, CLAUDE.md, CONTEXT.md) --------------------------------


def instructions_tree(worktree: Path) -> Path:
    """worktree/AGENTS.md, pkg/AGENTS.md, pkg/sub/CLAUDE.md (+ CONTEXT.md), the file below."""
    (worktree / "AGENTS.md").write_text("root rules\n")
    sub = worktree / "pkg" / "sub"
    sub.mkdir(parents=True)
    (worktree / "pkg" / "AGENTS.md").write_text("pkg rules\n")
    (sub / "CLAUDE.md").write_text("sub rules\n")
    (sub / "CONTEXT.md").write_text("not read: CLAUDE.md comes first\n")
    target = sub / "code.py"
    target.write_text("x = 1\n")
    return target


async def test_read_appends_the_instructions_of_the_folders_between(run, worktree: Path) -> None:
    target = instructions_tree(worktree)
    sub_rules = worktree / "pkg" / "sub" / "CLAUDE.md"
    pkg_rules = worktree / "pkg" / "AGENTS.md"

    result = await run("read", {"filePath": str(target)})

    assert not result.is_error, result.output
    assert result.output.endswith(
        "\n</content>\n\n<system-reminder>\n"
        f"Instructions from: {sub_rules}\nsub rules\n\n\n"
        f"Instructions from: {pkg_rules}\npkg rules\n\n</system-reminder>"
    )
    assert result.metadata["loaded"] == [str(sub_rules), str(pkg_rules)]
    assert "root rules" not in result.output  # the project's own are the system prompt's


async def test_instructions_come_once_per_session(run, worktree: Path) -> None:
    target = instructions_tree(worktree)
    sibling = target.with_name("other.py")
    sibling.write_text("y = 2\n")

    first = await run("read", {"filePath": str(target)})
    again = await run("read", {"filePath": str(sibling)})
    run.session_id = "ses_other"
    other_session = await run("read", {"filePath": str(sibling)})

    assert len(first.metadata["loaded"]) == 2
    assert again.metadata["loaded"] == [] and "<system-reminder>" not in again.output
    assert len(other_session.metadata["loaded"]) == 2


async def test_reading_an_instruction_file_does_not_bring_itself(run, worktree: Path) -> None:
    instructions_tree(worktree)
    rules = worktree / "pkg" / "AGENTS.md"

    result = await run("read", {"filePath": str(rules)})

    assert result.metadata["loaded"] == []
    assert result.output.endswith("</content>")


async def test_claude_md_can_be_switched_off_as_in_opencode(
    run, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = instructions_tree(worktree)
    monkeypatch.setenv("OPENCODE_DISABLE_CLAUDE_CODE_PROMPT", "true")

    result = await run("read", {"filePath": str(target)})

    sub = worktree / "pkg" / "sub"
    assert result.metadata["loaded"] == [str(sub / "CONTEXT.md"), str(worktree / "pkg/AGENTS.md")]


async def test_limit_reached_exactly_at_the_end_is_the_end_of_file(run, worktree: Path) -> None:
    path = worktree / "three.txt"
    path.write_text(numbered(3))
    result = await run("read", {"filePath": str(path), "limit": 3})
    assert result.output.endswith("3: line 3\n\n(End of file - total 3 lines)\n</content>")
    assert result.metadata["truncated"] is False


async def test_last_line_without_newline_counts(run, worktree: Path) -> None:
    path = worktree / "a.txt"
    path.write_text("a\nb")
    result = await run("read", {"filePath": str(path), "limit": 1})
    assert "(Showing lines 1-1 of 2. Use offset=2 to continue.)" in result.output


async def test_long_lines_are_cut_to_2000_chars(run, worktree: Path) -> None:
    path = worktree / "wide.txt"
    path.write_text("x" * 10_000 + "\nsecond\n")
    result = await run("read", {"filePath": str(path)})
    assert f"1: {'x' * 2000}... (line truncated to 2000 chars)\n2: second\n" in result.output
    assert "x" * 2001 not in result.output
    assert "(End of file - total 2 lines)" in result.output


async def test_long_multibyte_line_is_cut_on_a_character(run, worktree: Path) -> None:
    path = worktree / "wide.txt"
    path.write_text("é" * 5000 + "\n" + "😀" * 3000 + "\n", encoding="utf-8")
    result = await run("read", {"filePath": str(path)})
    assert f"1: {'é' * 2000}... (line truncated" in result.output
    assert f"2: {'😀' * 2000}... (line truncated" in result.output
    assert "\ufffd" not in result.output


async def test_byte_budget_caps_the_page(run, worktree: Path) -> None:
    path = worktree / "wide.txt"
    path.write_text("".join(f"{i:04d}" + "y" * 996 + "\n" for i in range(100)))
    result = await run("read", {"filePath": str(path)})
    # 51 lines of 1000 bytes plus 50 separators fit in 51 200 bytes; a 52nd does not.
    assert "51: 0050" in result.output and "52: " not in result.output
    assert result.output.endswith(
        "\n\n(Output capped at 50 KB. Showing lines 1-51. Use offset=52 to continue.)\n</content>"
    )
    assert result.metadata["truncated"] is True


async def test_crlf_lines_are_shown_without_carriage_returns(run, worktree: Path) -> None:
    path = worktree / "dos.txt"
    path.write_bytes(b"first\r\nsecond\r\nthird")
    result = await run("read", {"filePath": str(path)})
    assert result.output == file_output(
        path, "1: first\n2: second\n3: third", "(End of file - total 3 lines)"
    )
    assert "\r" not in result.output


async def test_utf8_bom_is_dropped_and_latin1_is_decoded(run, worktree: Path) -> None:
    (worktree / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    (worktree / "latin.txt").write_bytes(b"caf\xe9\n")
    bom = await run("read", {"filePath": "bom.txt"})
    latin = await run("read", {"filePath": "latin.txt"})
    assert "\n1: hello\n" in bom.output and "\ufeff" not in bom.output
    assert "\n1: café\n" in latin.output


async def test_empty_file_reads_as_zero_lines(run, worktree: Path) -> None:
    path = worktree / "empty.txt"
    path.write_text("")
    result = await run("read", {"filePath": str(path)})
    assert result.output == file_output(path, "", "(End of file - total 0 lines)")
    assert result.metadata["truncated"] is False


@pytest.mark.parametrize(
    ("content", "offset", "lines"),
    [("a\nb\nc\n", 4, 3), ("a\nb\nc", 9, 3), ("", 2, 0)],
)
async def test_offset_past_the_end_is_out_of_range(
    run, worktree: Path, content: str, offset: int, lines: int
) -> None:
    (worktree / "f.txt").write_text(content)
    result = await run("read", {"filePath": "f.txt", "offset": offset})
    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.output == f"Offset {offset} is out of range for this file ({lines} lines)"


async def test_svg_is_text(run, worktree: Path) -> None:
    (worktree / "icon.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    result = await run("read", {"filePath": "icon.svg"})
    assert "1: <svg" in result.output and result.attachments == []


# --- large files: streamed, total counted only when cheap -------------------------------


async def test_file_under_the_count_cap_reports_its_total(run, worktree: Path) -> None:
    path = repeat_lines(worktree / "mid.log", 4 * 1024 * 1024)
    total = path.read_bytes().count(b"\n")
    result = await run("read", {"filePath": str(path)})
    assert f"(Showing lines 1-2000 of {total}. Use offset=2001 to continue.)" in result.output


async def test_file_over_the_count_cap_reports_no_total(run, worktree: Path) -> None:
    path = repeat_lines(worktree / "big.log", 12 * 1024 * 1024)
    assert path.stat().st_size > pages.COUNT_CAP
    result = await run("read", {"filePath": str(path)})
    assert result.output.endswith(
        "2000: line 1000\n\n(Showing lines 1-2000. Use offset=2001 to continue.)\n</content>"
    )
    assert result.metadata["truncated"] is True
    # Paging on deep into the file still works (newlines are skipped in chunks).
    deep = await run("read", {"filePath": str(path), "offset": 1_000_001, "limit": 2})
    assert "1000001: line 1\n1000002: line 2\n\n(Showing lines 1000001-1000002" in deep.output


async def test_first_page_of_a_huge_file_does_not_scan_it(run, worktree: Path) -> None:
    path = worktree / "huge.log"
    path.write_bytes(numbered(5000).encode())
    try:
        os.truncate(path, 4 * 1024**3)  # sparse: 4 GiB of holes after the text
    except OSError as error:
        pytest.skip(f"no sparse files here: {error}")
    started = time.perf_counter()
    result = await run("read", {"filePath": str(path)})
    elapsed = time.perf_counter() - started
    assert "(Showing lines 1-2000. Use offset=2001 to continue.)" in result.output
    assert elapsed < 1.0, f"reading the first page took {elapsed:.2f}s"


async def test_a_huge_single_line_is_never_held_whole(run, worktree: Path) -> None:
    path = worktree / "one-line.txt"
    size = 64 * 1024 * 1024
    with path.open("wb") as handle:
        for _ in range(size // (1024 * 1024)):
            handle.write(b"z" * 1024 * 1024)
        handle.write(b"\ntail\n")
    tracemalloc.start()
    try:
        result = await run("read", {"filePath": str(path)})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"1: {'z' * 2000}... (line truncated to 2000 chars)\n2: tail\n" in result.output
    assert "(End of file - total 2 lines)" in result.output
    assert peak < 8 * 1024 * 1024, f"peak traced memory {peak} bytes"


async def test_huge_single_line_at_the_page_end_counts_the_rest(run, worktree: Path) -> None:
    path = worktree / "one-line.txt"
    path.write_bytes(b"head\n" + b"q" * (3 * 1024 * 1024) + b"\nafter\n")
    result = await run("read", {"filePath": str(path), "limit": 2})
    assert "2: " + "q" * 2000 + "..." in result.output
    assert "(Showing lines 1-2 of 3. Use offset=3 to continue.)" in result.output


@pytest.mark.parametrize("offset", [1, 9000])
def test_cancelled_reads_stop_in_their_loops(worktree: Path, offset: int) -> None:
    path = worktree / "a.txt"
    path.write_text(numbered(10_000))
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(Aborted):
        pages.read_page(path, offset, 2000, signal)


# --- directories ------------------------------------------------------------------------


def make_listing(root: Path) -> Path:
    folder = root / "pkg"
    (folder / "sub").mkdir(parents=True)
    (folder / "Beta.txt").write_text("b")
    (folder / "alpha.txt").write_text("a")
    (folder / "zeta").mkdir()
    (folder / "link").symlink_to(folder / "sub")
    (folder / "dangling").symlink_to(folder / "missing")
    return folder


async def test_directory_lists_sorted_entries_with_slashes(run, worktree: Path) -> None:
    folder = make_listing(worktree)
    result = await run("read", {"filePath": "pkg"})
    assert result.output == (
        f"<path>{folder}</path>\n<type>directory</type>\n<entries>\n"
        "alpha.txt\nBeta.txt\ndangling\nlink/\nsub/\nzeta/\n\n(6 entries)\n</entries>"
    )
    assert result.title == "pkg"
    assert result.metadata["truncated"] is False
    assert result.metadata["loaded"] == []


async def test_directory_pages_with_offset_and_limit(run, worktree: Path) -> None:
    make_listing(worktree)
    first = await run("read", {"filePath": "pkg", "limit": 2})
    assert first.output.endswith(
        "<entries>\nalpha.txt\nBeta.txt\n\n"
        "(Showing 2 of 6 entries. Use 'offset' parameter to read beyond entry 3)\n</entries>"
    )
    assert first.metadata == {"preview": "alpha.txt\nBeta.txt", "truncated": True, "loaded": []}
    last = await run("read", {"filePath": "pkg", "offset": 5, "limit": 2})
    assert last.output.endswith("<entries>\nsub/\nzeta/\n\n(6 entries)\n</entries>")
    assert last.metadata["truncated"] is False


async def test_directory_offset_past_the_end_is_an_error(run, worktree: Path) -> None:
    make_listing(worktree)
    (worktree / "empty").mkdir()
    result = await run("read", {"filePath": "pkg", "offset": 7})
    assert result.is_error
    assert result.output == "Offset 7 is out of range for this directory (6 entries)"
    empty = await run("read", {"filePath": "empty"})
    assert empty.output.endswith("<entries>\n\n\n(0 entries)\n</entries>")


async def test_directory_page_stops_at_the_byte_budget(run, worktree: Path) -> None:
    folder = worktree / "many"
    folder.mkdir()
    for i in range(300):
        (folder / f"{i:03d}-{'x' * 200}.txt").write_text("")
    result = await run("read", {"filePath": "many"})
    shown = result.output.split("<entries>\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert 200 < len(shown) < 300
    assert f"(Showing {len(shown)} of 300 entries." in result.output
    assert result.metadata["truncated"] is True


# --- missing and unreadable files -------------------------------------------------------


async def test_missing_file_suggests_up_to_three_siblings(run, worktree: Path) -> None:
    for name in ("config.json", "config.yaml", "configure.py", "old-config.ini", "other.txt"):
        (worktree / name).write_text("")
    result = await run("read", {"filePath": "config"})
    assert result.is_error
    assert result.metadata["error"] == "not_found"
    assert result.output == (
        f"File not found: {worktree / 'config'}\n\nDid you mean one of these?\n"
        f"{worktree / 'config.json'}\n{worktree / 'config.yaml'}\n{worktree / 'configure.py'}"
    )


async def test_missing_file_without_siblings(run, worktree: Path) -> None:
    result = await run("read", {"filePath": "nowhere/ghost.txt"})
    assert result.output == f"File not found: {worktree / 'nowhere' / 'ghost.txt'}"
    assert result.metadata["error"] == "not_found"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("archive.zip", b"plain text really\n"),
        ("blob", b"text\x00with a nul\n"),
        ("noise", bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16]) * 40 + b"some text" * 10),
    ],
)
async def test_binary_files_are_refused(run, worktree: Path, name: str, data: bytes) -> None:
    (worktree / name).write_bytes(data)
    result = await run("read", {"filePath": name})
    assert result.is_error
    assert result.output == f"Cannot read binary file: {worktree / name}"


async def test_a_few_control_characters_are_still_text(run, worktree: Path) -> None:
    (worktree / "esc.log").write_bytes(b"\x1b[31mred\x1b[0m plain text line\n")
    result = await run("read", {"filePath": "esc.log"})
    assert not result.is_error


async def test_fifo_is_refused_instead_of_blocking(run, worktree: Path) -> None:
    os.mkfifo(worktree / "pipe")
    result = await run("read", {"filePath": "pipe"})
    assert result.is_error
    assert "not a regular file or a directory" in result.output


# --- media ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pixel.png", "pixel.bin"])
async def test_png_is_attached_whatever_its_name(run, worktree: Path, name: str) -> None:
    data = tiny_png()
    (worktree / name).write_bytes(data)
    result = await run("read", {"filePath": name})
    assert not result.is_error
    assert result.output == "Image read successfully"
    assert result.metadata == {
        "preview": "Image read successfully",
        "truncated": False,
        "loaded": [],
    }
    (attachment,) = result.attachments
    assert attachment.mime == "image/png"
    assert attachment.filename == name
    prefix = "data:image/png;base64,"
    assert attachment.url.startswith(prefix)
    assert base64.b64decode(attachment.url[len(prefix) :]) == data


async def test_pdf_is_attached(run, worktree: Path) -> None:
    data = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
    (worktree / "doc.pdf").write_bytes(data)
    result = await run("read", {"filePath": "doc.pdf"})
    assert result.output == "PDF read successfully"
    (attachment,) = result.attachments
    assert attachment.mime == "application/pdf"
    assert attachment.url == "data:application/pdf;base64," + base64.b64encode(data).decode()


async def test_text_with_a_media_extension_is_read_as_text(run, worktree: Path) -> None:
    (worktree / "logo.png").write_text("version https://git-lfs.github.com/spec/v1\n")
    result = await run("read", {"filePath": "logo.png"})
    assert "1: version https://git-lfs" in result.output
    assert result.attachments == []


@pytest.mark.parametrize("head", [b"\x89PNG\r\n\x1a\n", b""])
async def test_media_over_20_mib_is_refused(run, worktree: Path, head: bytes) -> None:
    path = worktree / "huge.png"
    path.write_bytes(head)
    os.truncate(path, 20 * 1024 * 1024 + 1)
    result = await run("read", {"filePath": "huge.png"})
    assert result.is_error
    assert result.output == f"Media exceeds 20971520 byte ingestion limit: {path}"


# --- permissions ------------------------------------------------------------------------


async def test_ordinary_files_do_not_ask(run, editor: RecordingEditor, worktree: Path) -> None:
    (worktree / "a.txt").write_text("a")
    await run("read", {"filePath": "a.txt"})
    assert editor.asks == []


async def test_env_file_asks_with_the_worktree_relative_path(
    run, editor: RecordingEditor, worktree: Path
) -> None:
    (worktree / "app").mkdir()
    (worktree / "app" / ".env").write_text("SECRET=1\n")
    result = await run("read", {"filePath": "app/.env"})
    assert "1: SECRET=1" in result.output
    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always, ask.metadata) == (
        "read",
        ["app/.env"],
        ["*"],
        {},
    )


async def test_rejected_env_read_is_a_permission_error(
    run, editor: RecordingEditor, worktree: Path
) -> None:
    (worktree / ".env.local").write_text("SECRET=1\n")
    editor.reply = "reject"
    result = await run("read", {"filePath": ".env.local"})
    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    assert "SECRET" not in result.output


async def test_env_example_does_not_ask(run, editor: RecordingEditor, worktree: Path) -> None:
    (worktree / ".env.example").write_text("SECRET=\n")
    result = await run("read", {"filePath": ".env.example"})
    assert not result.is_error
    assert editor.asks == []


async def test_external_file_asks_external_directory(
    run, editor: RecordingEditor, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("far away\n")
    result = await run("read", {"filePath": str(outside / "x.txt")})
    assert "1: far away" in result.output
    (ask,) = editor.asks
    assert ask.permission == "external_directory"
    assert ask.patterns == [f"{outside.as_posix()}/*"]


async def test_external_directory_asks_for_the_directory_itself(
    run, editor: RecordingEditor, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    await run("read", {"filePath": str(outside)})
    assert editor.asks[0].patterns == [f"{outside.as_posix()}/*"]


async def test_symlink_out_of_the_worktree_asks_external_directory(
    run, editor: RecordingEditor, worktree: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("k\n")
    (worktree / "key.txt").symlink_to(secret / "key.txt")
    editor.reply = "reject"
    result = await run("read", {"filePath": "key.txt"})
    assert result.metadata["error"] == "permission_rejected"
    assert editor.asks[0].permission == "external_directory"
    assert editor.asks[0].patterns == [f"{secret.as_posix()}/*"]


class ReplacingEditor(RecordingEditor):
    """While a person is asked, the file is saved anew (a new file renamed over it, as
    editors save): the answer must come from the file as it is after the ask."""

    def __init__(self, path: Path, text: str) -> None:
        super().__init__()
        self.path, self.text = path, text

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.write_text(self.text)
        fresh.replace(self.path)
        return await super().ask_permission(request)


@pytest.mark.parametrize("where", ["env file", "outside the project"])
async def test_a_file_saved_anew_during_an_ask_is_read_as_it_is_after(
    worktree: Path, tmp_path: Path, where: str
) -> None:
    if where == "env file":
        target = worktree / ".env"  # asks "read"
    else:
        (tmp_path / "elsewhere").mkdir()
        target = tmp_path / "elsewhere" / "notes.txt"  # asks "external_directory"
    target.write_text("before the ask\n")
    editor = ReplacingEditor(target, "after the ask\n")
    result = await ToolHost(worktree, tools=[read.tool]).execute(
        "read", {"filePath": str(target)}, editor=editor
    )
    assert editor.asks, "the read was expected to ask"
    assert "1: after the ask" in result.output
    assert "before the ask" not in result.output


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_reads_leave_no_file_open(run, editor: RecordingEditor, worktree: Path) -> None:
    (worktree / "small.txt").write_text("small\n")
    repeat_lines(worktree / "large.txt", 1 << 20)  # past the size read on the spot
    (worktree / ".env").write_text("SECRET=1\n")
    (worktree / "folder").mkdir()
    os.mkfifo(worktree / "pipe")
    (worktree / "link.txt").symlink_to(worktree / "small.txt")
    calls = ["small.txt", "large.txt", ".env", "folder", "pipe", "missing.txt", "link.txt"]
    for name in calls:  # once first: lazy imports and caches may open files of their own
        await run("read", {"filePath": name})
    before = open_fds()
    for reply in ("once", "reject"):
        editor.reply = reply
        for name in calls:
            await run("read", {"filePath": name})
    assert open_fds() == before


# --- editor buffers and side effects ----------------------------------------------------


async def test_unsaved_buffer_is_served_instead_of_the_disk(
    run, editor: RecordingEditor, worktree: Path
) -> None:
    path = worktree / "open.py"
    path.write_text("on disk\n")
    editor.buffers[path] = "unsaved one\r\nunsaved two\nunsaved three\n"
    result = await run("read", {"filePath": "open.py", "offset": 2, "limit": 1})
    assert result.output == file_output(
        path, "2: unsaved two", "(Showing lines 2-2 of 3. Use offset=3 to continue.)"
    )
    del editor.buffers[path]
    disk = await run("read", {"filePath": "open.py"})
    assert "1: on disk\n" in disk.output


async def test_unsaved_buffer_pages_like_a_file(
    run, editor: RecordingEditor, worktree: Path
) -> None:
    path = worktree / "open.py"
    path.write_text("")
    editor.buffers[path] = "only\n"
    past = await run("read", {"filePath": "open.py", "offset": 3})
    assert past.output == "Offset 3 is out of range for this file (1 lines)"
    editor.buffers[path] = "w" * 3000 + "\n" + ("v" * 1000 + "\n") * 60
    wide = await run("read", {"filePath": "open.py"})
    assert f"1: {'w' * 2000}... (line truncated to 2000 chars)" in wide.output
    assert "Output capped at 50 KB. Showing lines 1-" in wide.output


async def test_text_reads_record_a_read_stamp(run, host: ToolHost, worktree: Path) -> None:
    path = worktree / "a.txt"
    path.write_text("a\n")
    (worktree / "p.png").write_bytes(tiny_png())
    await run("read", {"filePath": "a.txt"})
    await run("read", {"filePath": "p.png"})
    stamps = host.sessions.get("ses_test").read_stamps
    assert stamps == {str(path): path.stat().st_mtime_ns}


class PrewarmEditor(RecordingEditor):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.prewarmed: list[Path] = []

    def prewarm(self, path: Path | str) -> None:
        self.prewarmed.append(Path(path))
        if self.fail:
            raise RuntimeError("language server exploded")


@pytest.mark.parametrize("fail", [False, True])
async def test_text_reads_prewarm_the_editor(host: ToolHost, worktree: Path, fail: bool) -> None:
    path = worktree / "a.py"
    path.write_text("x = 1\n")
    editor = PrewarmEditor(fail=fail)
    result = await host.execute("read", {"filePath": "a.py"}, editor=editor)
    assert not result.is_error
    assert editor.prewarmed == [path]


def test_tool_declaration() -> None:
    assert read.tool.kind == "read"
    assert read.tool.annotations.read_only and read.tool.annotations.idempotent
    assert not read.tool.annotations.destructive
    assert set(read.tool.schema["properties"]) == {"filePath", "offset", "limit"}
    assert read.tool.schema["required"] == ["filePath"]


# --- the chunked page builder against the line-by-line one --------------------------------

_LINE_TEXT = st.one_of(
    st.text(alphabet="ab é€\t", max_size=12),
    st.builds(lambda n, c: c * n, st.integers(1990, 2010), st.sampled_from(["x", "é"])),
    st.just("q" * 9000),  # longer than the bytes kept of a line
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_LINE_TEXT, max_size=40),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    offset=st.integers(1, 45),
    limit=st.integers(1, 45),
    in_memory=st.booleans(),
)
def test_file_pages_match_pages_of_the_same_text(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    crlf: bool,
    final_newline: bool,
    offset: int,
    limit: int,
    in_memory: bool,
) -> None:
    text = ("\r\n" if crlf else "\n").join(lines) + ("\n" if final_newline and lines else "")
    path = tmp_path_factory.mktemp("pages") / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    signal = AbortSignal()
    whole_file_bytes = pages.WHOLE_FILE_BYTES
    # A small file is paged from memory; with the threshold at 0 it is streamed from disk.
    pages.WHOLE_FILE_BYTES = whole_file_bytes if in_memory else 0
    try:
        from_file = pages.read_page(path, offset, limit, signal)
    finally:
        pages.WHOLE_FILE_BYTES = whole_file_bytes
    from_text = pages.page_of_text(text, offset, limit, signal)
    assert isinstance(from_file, pages.Page)
    assert from_file.lines == from_text.lines
    assert (from_file.more, from_file.cut) == (from_text.more, from_text.cut)
    if from_file.count is not None:
        assert from_file.count == from_text.count


def test_a_file_that_holds_more_than_its_size_says_is_read_to_its_end() -> None:
    # /proc files report a size of 0: the whole-file read finds more and streams instead.
    page = pages.read_page(Path("/proc/self/status"), 1, 2000, AbortSignal())
    assert isinstance(page, pages.Page)
    assert page.lines[0].startswith("Name:") and page.count == len(page.lines) > 5
