"""Edits of open files go through the editor; prewarm; progress; every fallback.

A FakeEditor (tests/wire/fake_editor.py) holds buffers, applies workspace/applyEdit
to them and writes them on editor/saveDocuments, as a real editor would.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.wire.fake_editor import FakeEditor, connect_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

MESSAGES = (f"msg_{n}" for n in itertools.count())
EDITING = {"applyEdit": True, "openDocument": True}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bridge") / "project"
    root.mkdir()
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(root: Path):
    async with connect_editor(root, EDITING) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def plain(root: Path):
    async with connect_editor(root) as client:  # answers requests but declared none
        yield client


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    for name in ("editor", "plain"):
        if name in request.fixturenames:
            request.getfixturevalue(name).reset()


async def run(client: FakeEditor, tool: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return await client.execute(tool, args, messageID=next(MESSAGES), **extra)


async def ok(client: FakeEditor, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await run(client, tool, args)
    assert result["isError"] is False, result["output"]
    return result


async def opened_and_read(client: FakeEditor, path: Path, text: str) -> str:
    path.write_text(text)
    uri = await client.open(path)
    await ok(client, "read", {"filePath": str(path)})
    return uri


def only_document_edit(applied: dict[str, Any]) -> dict[str, Any]:
    (change,) = applied["edit"]["documentChanges"]
    return change


# --- prewarm --------------------------------------------------------------------------------


async def test_read_prewarms_a_client_that_opens_documents(editor: FakeEditor, root: Path) -> None:
    path = root / "warm.py"
    path.write_text("x = 1\n")
    await ok(editor, "read", {"filePath": str(path)})
    await editor.call("tools/list", {})  # the request, if any, has arrived by now
    assert editor.opened == [path.as_uri()]


async def test_no_prewarm_for_a_client_that_did_not_declare_it(
    plain: FakeEditor, root: Path
) -> None:
    path = root / "cold.py"
    path.write_text("x = 1\n")
    await ok(plain, "read", {"filePath": str(path)})
    await plain.call("tools/list", {})
    assert plain.opened == []


async def test_prewarm_never_delays_the_read(editor: FakeEditor, root: Path) -> None:
    editor.open_gate.clear()  # the editor does not answer editor/openDocument
    path = root / "slow-editor.py"
    path.write_text("y = 2\n")
    try:
        started = time.monotonic()
        result = await asyncio.wait_for(ok(editor, "read", {"filePath": str(path)}), 5)
        assert "1: y = 2" in result["output"]
        assert time.monotonic() - started < 2
        assert editor.opened == [path.as_uri()]
    finally:
        editor.open_gate.set()


# --- edits of open files --------------------------------------------------------------------


async def test_edit_of_an_open_file_goes_through_the_editor(editor: FakeEditor, root: Path) -> None:
    path = root / "open.py"
    uri = await opened_and_read(editor, path, "a = 1\nb = 2\nc = 3\n")
    version = editor.buffers[uri].version

    result = await ok(
        editor, "edit", {"filePath": str(path), "oldString": "b = 2", "newString": "b = 20"}
    )

    assert result["output"] == "Edit applied successfully."
    (applied,) = editor.applied
    change = only_document_edit(applied)
    assert change["textDocument"] == {"uri": uri, "version": version}
    assert change["edits"] == [
        {
            "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
            "newText": "b = 20\n",
        }
    ]
    # Saved only as the edit left it: a buffer typed in since is not saved for the user.
    assert editor.save_asks == [{"uris": [uri], "versions": {uri: editor.buffers[uri].version}}]
    assert editor.buffers[uri].text == "a = 1\nb = 20\nc = 3\n"
    assert path.read_text() == "a = 1\nb = 20\nc = 3\n"


async def test_unsaved_work_elsewhere_in_the_buffer_is_kept(editor: FakeEditor, root: Path) -> None:
    path = root / "dirty.py"
    uri = await opened_and_read(editor, path, "one\ntwo\nthree\n")
    editor.type(path, "one\ntwo\nthree\nfour (typed, unsaved)\n")
    await editor.call("tools/list", {})
    version = editor.buffers[uri].version

    await ok(editor, "edit", {"filePath": str(path), "oldString": "one", "newString": "ONE"})

    assert only_document_edit(editor.applied[0])["textDocument"]["version"] == version
    assert editor.buffers[uri].text == "ONE\ntwo\nthree\nfour (typed, unsaved)\n"
    # The disk gets the agent's change on its own text; the user's line stays unsaved.
    assert path.read_text() == "ONE\ntwo\nthree\n"
    assert editor.save_asks == []


async def test_write_and_multiedit_go_through_the_editor(editor: FakeEditor, root: Path) -> None:
    path = root / "whole.txt"
    uri = await opened_and_read(editor, path, "old\n")

    await ok(editor, "write", {"filePath": str(path), "content": "new\ncontent\n"})
    assert editor.buffers[uri].text == path.read_text() == "new\ncontent\n"
    await ok(
        editor,
        "multiedit",
        {
            "filePath": str(path),
            "edits": [
                {"oldString": "new", "newString": "newer"},
                {"oldString": "content", "newString": "text"},
            ],
        },
    )
    assert editor.buffers[uri].text == path.read_text() == "newer\ntext\n"
    assert len(editor.applied) == 2 and len(editor.save_asks) == 2


async def test_a_refused_edit_is_an_error_showing_the_current_content(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "refused.py"
    lines = [f"line {n}" for n in range(1, 21)]
    await opened_and_read(editor, path, "\n".join(lines) + "\n")
    editor.apply_reply = "refuse"

    result = await run(
        editor, "edit", {"filePath": str(path), "oldString": "line 10", "newString": "line ten"}
    )

    assert result["isError"] is True
    assert result["metadata"]["error"] == "failed"
    output = result["output"]
    assert output.startswith(f"The edit to {path} was not applied: the editor refused it")
    assert "the user said no" in output
    assert "(lines 7-13 of 20)" in output
    assert "\n7: line 7\n" in output and "\n10: line 10\n" in output and "\n13: line 13\n" in output
    assert "6: line 6" not in output and "14: line 14" not in output
    assert editor.save_asks == []
    assert path.read_text() == "\n".join(lines) + "\n"


async def test_a_version_mismatch_is_refused_and_shows_what_the_editor_holds(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "typing.py"
    await opened_and_read(editor, path, "alpha\nbeta\n")
    # The user typed; the editor has not sent the change yet.
    editor.type(path, "alpha\nbeta\ngamma\n", notify=False)

    result = await run(
        editor, "edit", {"filePath": str(path), "oldString": "beta", "newString": "BETA"}
    )

    assert result["isError"] is True
    assert "was not applied" in result["output"] and "is not the buffer's" in result["output"]
    assert editor.buffers[path.as_uri()].text == "alpha\nbeta\ngamma\n"
    assert path.read_text() == "alpha\nbeta\n"


async def test_an_editor_error_is_an_error_result(editor: FakeEditor, root: Path) -> None:
    path = root / "locked.py"
    await opened_and_read(editor, path, "x\n")
    editor.apply_reply = "error"

    result = await run(editor, "edit", {"filePath": str(path), "oldString": "x", "newString": "y"})

    assert result["isError"] is True
    assert result["metadata"]["error"] == "failed"
    assert "the buffer is locked" in result["output"] and "1: x" in result["output"]
    assert path.read_text() == "x\n"


async def test_an_editor_that_applies_but_never_saves_still_gets_the_disk_written(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "unsaved.py"
    uri = await opened_and_read(editor, path, "keep\nchange me\n")
    editor.saves = False

    await ok(editor, "edit", {"filePath": str(path), "oldString": "change me", "newString": "done"})

    assert editor.save_asks == [{"uris": [uri], "versions": {uri: editor.buffers[uri].version}}]
    assert editor.buffers[uri].text == "keep\ndone\n"
    assert path.read_text() == "keep\ndone\n"


async def test_typing_after_the_edit_landed_is_not_saved_for_the_user(
    editor: FakeEditor, root: Path
) -> None:
    """The buffer matched the disk, the edit landed, and the user typed on before the
    save came: the editor saves only the version the edit left, so it does not save."""
    path = root / "typed-on.py"
    uri = await opened_and_read(editor, path, "keep\nchange me\n")
    editor.on_save = lambda: editor.type(path, "keep\ndone\ntyped on, unsaved\n")

    result = await ok(
        editor, "edit", {"filePath": str(path), "oldString": "change me", "newString": "done"}
    )

    assert result["output"] == "Edit applied successfully."
    assert editor.buffers[uri].text == "keep\ndone\ntyped on, unsaved\n"
    assert path.read_text() == "keep\ndone\n"  # exactly the change, not the typing
    assert editor.disk_written == [uri]  # the editor keeps the disk's new timestamp


async def test_a_format_on_save_is_kept_and_the_model_is_told(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "formatted.py"
    await opened_and_read(editor, path, "x=1\n")
    editor.transform = lambda text: text.replace("=", " = ")

    result = await ok(
        editor, "edit", {"filePath": str(path), "oldString": "x=1", "newString": "x=2"}
    )

    assert path.read_text() == "x = 2\n"  # the editor's save wins
    assert "Read the file before editing it again." in result["output"]
    # ...and the next edit is refused until it has been read again.
    again = await run(editor, "edit", {"filePath": str(path), "oldString": "2", "newString": "3"})
    assert again["isError"] is True and "read" in again["output"].lower()


async def test_a_file_that_is_not_open_is_written_by_the_sidecar(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "closed.py"
    path.write_text("a\n")
    await ok(editor, "read", {"filePath": str(path)})

    await ok(editor, "edit", {"filePath": str(path), "oldString": "a", "newString": "b"})

    assert editor.applied == [] and editor.save_asks == []
    assert path.read_text() == "b\n"


async def test_a_plain_client_gets_the_file_written_by_the_sidecar(
    plain: FakeEditor, root: Path
) -> None:
    path = root / "plain.py"
    uri = await opened_and_read(plain, path, "a\n")

    await ok(plain, "edit", {"filePath": str(path), "oldString": "a", "newString": "b"})

    assert plain.applied == [] and plain.save_asks == []
    assert path.read_text() == "b\n"
    assert plain.buffers[uri].text == "a\n"  # the editor reloads it from disk itself


async def test_a_clean_buffer_older_than_the_disk_is_not_edited(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "stale.py"
    await opened_and_read(editor, path, "as opened\n")
    path.write_text("changed by a command\n")
    await ok(editor, "read", {"filePath": str(path)})

    await ok(editor, "edit", {"filePath": str(path), "oldString": "command", "newString": "tool"})

    assert editor.applied == []
    assert path.read_text() == "changed by a tool\n"


async def test_typing_while_the_review_is_open_keeps_both(root: Path) -> None:
    path = root / "prompted.py"
    options = {"config": {"permission": {"edit": "ask"}}}
    async with connect_editor(root, {**EDITING, "permissionAsk": True}, **options) as client:
        uri = await opened_and_read(client, path, "first\nsecond\n")
        client.on_ask = lambda: client.type(path, "first\nsecond\nthird (typed)\n")

        await ok(client, "edit", {"filePath": str(path), "oldString": "first", "newString": "1st"})

        assert client.buffers[uri].text == "1st\nsecond\nthird (typed)\n"
        assert path.read_text() == "1st\nsecond\n"  # the new typing is not saved for the user
        assert client.save_asks == []
        assert client.disk_written == [uri]


async def test_typing_where_the_edit_goes_while_the_review_is_open_refuses_it(
    root: Path,
) -> None:
    path = root / "prompted2.py"
    options = {"config": {"permission": {"edit": "ask"}}}
    async with connect_editor(root, {**EDITING, "permissionAsk": True}, **options) as client:
        await opened_and_read(client, path, "first\nsecond\n")
        client.on_ask = lambda: client.type(path, "first (typed)\nsecond\n")

        result = await run(
            client, "edit", {"filePath": str(path), "oldString": "first", "newString": "1st"}
        )

        assert result["isError"] is True
        assert "the user typed where the edit goes" in result["output"]
        assert "1: first (typed)" in result["output"]
        assert client.applied == []
        assert path.read_text() == "first\nsecond\n"


# --- apply_patch ----------------------------------------------------------------------------


def patch(*sections: str) -> str:
    return "\n".join(["*** Begin Patch", *sections, "*** End Patch"])


async def test_apply_patch_routes_open_files_through_the_editor(
    editor: FakeEditor, root: Path
) -> None:
    shown, hidden = root / "patch-open.txt", root / "patch-closed.txt"
    uri = await opened_and_read(editor, shown, "a\nb\n")
    hidden.write_text("c\nd\n")

    result = await ok(
        editor,
        "apply_patch",
        {
            "patchText": patch(
                f"*** Update File: {shown}",
                "@@",
                " a",
                "-b",
                "+B",
                f"*** Update File: {hidden}",
                "@@",
                " c",
                "-d",
                "+D",
                f"*** Add File: {root / 'patch-new.txt'}",
                "+new",
            )
        },
    )

    assert result["output"].startswith("Success. Updated the following files:")
    assert [only_document_edit(a)["textDocument"]["uri"] for a in editor.applied] == [uri]
    assert editor.buffers[uri].text == shown.read_text() == "a\nB\n"
    assert hidden.read_text() == "c\nD\n"
    assert (root / "patch-new.txt").read_text() == "new\n"


async def test_apply_patch_refused_by_the_editor_changes_no_file(
    editor: FakeEditor, root: Path
) -> None:
    shown, hidden, doomed = root / "all-open.txt", root / "all-closed.txt", root / "doomed.txt"
    await opened_and_read(editor, shown, "a\nb\n")
    hidden.write_text("c\nd\n")
    doomed.write_text("bye\n")
    editor.apply_reply = "refuse"

    result = await run(
        editor,
        "apply_patch",
        {
            "patchText": patch(
                f"*** Update File: {hidden}",
                "@@",
                " c",
                "-d",
                "+D",
                f"*** Update File: {shown}",
                "@@",
                " a",
                "-b",
                "+B",
                f"*** Delete File: {doomed}",
            )
        },
    )

    assert result["isError"] is True
    output = result["output"]
    assert output.startswith("Failed to apply the patch: The edit to")
    assert "so no file was changed" in output
    assert hidden.read_text() == "c\nd\n"
    assert shown.read_text() == "a\nb\n"
    assert doomed.read_text() == "bye\n"


async def test_apply_patch_undoes_earlier_open_files_when_a_later_one_is_refused(
    editor: FakeEditor, root: Path
) -> None:
    first, second = root / "undo-1.txt", root / "undo-2.txt"
    first_uri = await opened_and_read(editor, first, "1\n")
    second_uri = await opened_and_read(editor, second, "2\n")
    editor.type(second, "2\n", notify=False)  # the second buffer moved on: refused

    result = await run(
        editor,
        "apply_patch",
        {
            "patchText": patch(
                f"*** Update File: {first}",
                "@@",
                "-1",
                "+one",
                f"*** Update File: {second}",
                "@@",
                "-2",
                "+two",
            )
        },
    )

    assert result["isError"] is True, result["output"]
    assert "put back (undo-1.txt)" in result["output"]
    assert editor.buffers[first_uri].text == "1\n"  # undone through the editor
    assert first.read_text() == "1\n" and second.read_text() == "2\n"
    assert editor.buffers[second_uri].text == "2\n"
    labels = [a["label"] for a in editor.applied]
    assert labels == [
        "toolhost apply_patch: undo-1.txt",
        "toolhost apply_patch: undo-2.txt",
        "toolhost apply_patch: undo undo-1.txt",
    ]


# --- $/progress ------------------------------------------------------------------------------


async def test_progress_begin_report_end_for_a_work_done_token(editor: FakeEditor) -> None:
    token = "bridge-progress"
    editor.progress_reports.setdefault(token, [])  # as if the client had created it
    await run(
        editor,
        "bash",
        {"command": "echo one; sleep 0.2; echo two", "description": "Print two lines"},
        workDoneToken=token,
    )
    reports = editor.progress_reports[token]
    kinds = [report.kind for report in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert "report" in kinds
    assert reports[0].title == "bash"
    assert any(r.kind == "report" and r.message == "Print two lines" for r in reports)


async def test_no_progress_without_a_token(editor: FakeEditor, root: Path) -> None:
    before = dict(editor.progress_reports)
    (root / "p.txt").write_text("p\n")
    await ok(editor, "read", {"filePath": str(root / "p.txt")})
    assert editor.progress_reports == before
