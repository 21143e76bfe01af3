"""Diagnostics after an edit: a baseline first, then only the errors the change introduced.

The FakeEditor's "language server" reports ``ERR(name)`` as an undefined name,
``WARN`` as a warning, and ``USES file word`` as an error while ``file`` lacks
``word`` (tests/wire/fake_editor.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.wire.fake_editor import FakeEditor, connect_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

MESSAGES = (f"msg_{n}" for n in itertools.count())
SENTENCE = (
    "\n\nThe edit was applied. The language server now reports these new errors in this "
    "file; fix them next:\n"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diagnostics") / "project"
    root.mkdir()
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(root: Path):
    async with connect_editor(root, {"applyEdit": True, "diagnostics": True}) as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> None:
    if "editor" in request.fixturenames:
        request.getfixturevalue("editor").reset()


async def ok(client: FakeEditor, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.execute(tool, args, messageID=next(MESSAGES))
    assert result["isError"] is False, result["output"]
    return result


async def prepared(client: FakeEditor, path: Path, text: str, *, open_it: bool = True) -> None:
    path.write_text(text)
    if open_it:
        await client.open(path)
    await ok(client, "read", {"filePath": str(path)})
    client.diagnostic_asks.clear()


async def edit(client: FakeEditor, path: Path, old: str, new: str) -> dict[str, Any]:
    return await ok(client, "edit", {"filePath": str(path), "oldString": old, "newString": new})


async def test_only_the_errors_the_edit_introduced_are_reported(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "mod.py"
    await prepared(editor, path, "a = ERR(old)\nb = 1\nc = WARN\n")

    result = await edit(editor, path, "b = 1", "b = ERR(fresh)\nd = WARN")

    assert result["output"] == (
        "Edit applied successfully."
        + SENTENCE
        + f"<diagnostics file=\"{path}\">\nERROR [2:5] undefined name 'fresh'\n</diagnostics>"
    )
    uri = path.as_uri()
    assert list(result["metadata"]["diagnostics"]) == [uri]
    (new,) = result["metadata"]["diagnostics"][uri]
    assert new["message"] == "undefined name 'fresh'"
    assert new["range"]["start"] == {"line": 1, "character": 4}
    assert new["severity"] == 1 and new["code"] == "E1"
    # A baseline without waiting, then a bounded wait (the default) after the change.
    assert editor.diagnostic_asks == [
        {"uris": [uri], "waitMs": 0},
        {"uris": [uri], "waitMs": 3000},
    ]


async def test_an_old_error_that_moved_is_not_new(editor: FakeEditor, root: Path) -> None:
    path = root / "moved.py"
    await prepared(editor, path, "x = ERR(old)\n")

    result = await edit(editor, path, "x = ERR(old)", "# a comment above\n\nx = ERR(old)")

    assert result["output"] == "Edit applied successfully."
    assert result["metadata"]["diagnostics"] == {}


async def test_a_second_copy_of_an_old_error_is_new(editor: FakeEditor, root: Path) -> None:
    path = root / "twice.py"
    await prepared(editor, path, "x = ERR(same)\n")

    result = await edit(editor, path, "x = ERR(same)", "x = ERR(same)\ny = ERR(same)")

    assert "ERROR [2:5] undefined name 'same'" in result["output"]
    assert "[1:5]" not in result["output"]


async def test_at_most_20_errors_per_file(editor: FakeEditor, root: Path) -> None:
    path = root / "many.py"
    await prepared(editor, path, "start\n")

    body = "\n".join(f"v{n} = ERR(name{n})" for n in range(25))
    result = await edit(editor, path, "start", body)

    block = result["output"].split("<diagnostics", 1)[1]
    assert block.count("ERROR [") == 20
    assert "ERROR [20:" in block and "ERROR [21:" not in block
    assert "\n... and 5 more\n</diagnostics>" in block
    assert len(result["metadata"]["diagnostics"][path.as_uri()]) == 25


async def test_write_reports_at_most_five_other_files(editor: FakeEditor, root: Path) -> None:
    api = root / "api.py"
    await prepared(editor, api, "def shared(): ...\n")
    users = [root / f"user{n}.py" for n in range(7)]
    for user in users:
        user.write_text(f"USES api.py shared  # user {user.name}\n")
        await editor.open(user)

    result = await ok(editor, "write", {"filePath": str(api), "content": "def renamed(): ...\n"})

    output = result["output"]
    assert output.startswith(
        "Wrote file successfully.\n\nThe file was written. The change also introduced errors "
        "in other files; fix them next:\n"
    )
    assert output.count("<diagnostics file=") == 5
    for user in users[:5]:
        assert f"<diagnostics file=\"{user}\">\nERROR [1:1] 'shared' is not defined in api.py" in (
            output
        )
    assert str(users[5]) not in output and str(users[6]) not in output
    assert set(result["metadata"]["diagnostics"]) == {user.as_uri() for user in users}
    # The written file is waited for; the other open files are read as they are then.
    baseline, after, others = editor.diagnostic_asks
    assert baseline["waitMs"] == 0 and api.as_uri() in baseline["uris"]
    assert {u.as_uri() for u in users} <= set(baseline["uris"])
    assert after == {"uris": [api.as_uri()], "waitMs": 3000}
    assert others["waitMs"] == 0 and api.as_uri() not in others["uris"]


async def test_write_reports_its_own_file_first(editor: FakeEditor, root: Path) -> None:
    path = root / "own.py"
    await prepared(editor, path, "fine\n")

    result = await ok(editor, "write", {"filePath": str(path), "content": "x = ERR(oops)\n"})

    assert result["output"].startswith(
        "Wrote file successfully.\n\nThe file was written. The language server now reports "
        f'these new errors in this file; fix them next:\n<diagnostics file="{path}">\n'
        "ERROR [1:5] undefined name 'oops'\n</diagnostics>"
    )


async def test_a_file_that_is_not_open_is_reported_too(editor: FakeEditor, root: Path) -> None:
    path = root / "closed.py"
    await prepared(editor, path, "ok\n", open_it=False)

    result = await edit(editor, path, "ok", "ERR(closed)")

    assert editor.applied == []  # written by the sidecar
    assert "ERROR [1:1] undefined name 'closed'" in result["output"]


async def test_apply_patch_reports_each_file(editor: FakeEditor, root: Path) -> None:
    one, two = root / "p1.py", root / "p2.py"
    await prepared(editor, one, "a\n")
    await prepared(editor, two, "b\n", open_it=False)
    patch = "\n".join(
        [
            "*** Begin Patch",
            f"*** Update File: {one}",
            "@@",
            "-a",
            "+ERR(one)",
            f"*** Update File: {two}",
            "@@",
            "-b",
            "+ERR(two)",
            "*** End Patch",
        ]
    )

    result = await ok(editor, "apply_patch", {"patchText": patch})

    assert result["output"] == (
        "Success. Updated the following files:\nM p1.py\nM p2.py\n\nThe patch was applied. The "
        "language server now reports new errors in these files; fix them next:\n"
        f"<diagnostics file=\"{one}\">\nERROR [1:1] undefined name 'one'\n</diagnostics>\n"
        f"<diagnostics file=\"{two}\">\nERROR [1:1] undefined name 'two'\n</diagnostics>"
    )
    assert set(result["metadata"]["diagnostics"]) == {one.as_uri(), two.as_uri()}


async def test_an_editor_that_fails_to_answer_gives_no_report(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "quiet.py"
    await prepared(editor, path, "a\n")
    editor.diagnostics_fail = True

    result = await edit(editor, path, "a", "ERR(hidden)")

    assert result["output"] == "Edit applied successfully."
    assert result["metadata"]["diagnostics"] == {}
    assert len(editor.diagnostic_asks) == 1  # no baseline: no second request
    assert path.read_text() == "ERR(hidden)\n"


async def test_a_client_without_diagnostics_is_never_asked(root: Path) -> None:
    path = root / "no-flag.py"
    async with connect_editor(root, {"applyEdit": True}) as client:
        await prepared(client, path, "a\n")

        result = await edit(client, path, "a", "ERR(unseen)")

        assert result["output"] == "Edit applied successfully."
        assert result["metadata"]["diagnostics"] == {}
        assert client.diagnostic_asks == []


async def test_the_wait_is_configurable(root: Path) -> None:
    path = root / "waits.py"
    flags = {"applyEdit": True, "diagnostics": True}
    async with connect_editor(root, flags, diagnostics={"waitMs": 250}) as client:
        await prepared(client, path, "a\n")

        await edit(client, path, "a", "b")

        assert [ask["waitMs"] for ask in client.diagnostic_asks] == [0, 250]
