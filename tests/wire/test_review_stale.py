"""A review stays correct when the file changes under it: the accepted change lands on the
file's new text where the two do not touch, and nothing is written where they do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.wire.fake_editor import connect_editor

pytestmark = pytest.mark.asyncio

EDITING = {"applyEdit": True, "openDocument": True, "permissionAsk": True}


async def edit_while_reviewed(root: Path, new_text: str, **edit: str) -> dict:
    path = root / "a.txt"
    async with connect_editor(root, EDITING, permissionDefaults={"edit": "ask"}) as client:
        await client.execute("read", {"filePath": str(path)})
        client.on_ask = lambda: path.write_text(new_text)  # while the review is open
        return await client.execute("edit", {"filePath": str(path), **edit})


async def test_a_change_made_elsewhere_meanwhile_is_kept_and_the_hunk_lands_in_place(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    result = await edit_while_reviewed(
        tmp_path, "zero\none\ntwo\nthree\nfour\n", oldString="two", newString="TWO"
    )
    assert result["isError"] is False, result["output"]
    assert (tmp_path / "a.txt").read_text() == "zero\none\nTWO\nthree\nfour\n"
    assert "changed while the user was reviewing" in result["output"]
    assert "+TWO" in result["metadata"]["diff"] and "+zero" not in result["metadata"]["diff"]


async def test_a_change_where_the_hunk_goes_is_stale_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    result = await edit_while_reviewed(
        tmp_path, "one\n2 by the user\nthree\n", oldString="two", newString="TWO"
    )
    assert result["isError"] is True
    assert "changed while the user was reviewing" in result["output"]
    assert "nothing was written" in result["output"]
    assert (tmp_path / "a.txt").read_text() == "one\n2 by the user\nthree\n"


async def test_a_buffer_the_user_saves_during_the_review_gets_the_change_on_what_was_saved(
    tmp_path: Path,
) -> None:
    """The change was made from unsaved typing; the user types more and saves while the
    review is open: the file is the disk's again, and the change lands on what was saved,
    in the buffer and on disk alike (nothing of the user's lost or doubled)."""
    from lsprotocol import types

    path = tmp_path / "a.txt"
    path.write_text("one\ntwo\nthree\nfour\nfive\n")
    async with connect_editor(tmp_path, EDITING, permissionDefaults={"edit": "ask"}) as client:
        await client.open(path)
        client.type(path, "zero\none\ntwo\nthree\nfour\nfive\n")  # unsaved
        await client.execute("read", {"filePath": str(path)})
        saved = "zero\nONE\ntwo\nthree\nfour\nfive\n"

        def type_and_save() -> None:
            client.type(path, saved)
            path.write_text(saved)
            client.text_document_did_save(
                types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri()))
            )

        client.on_ask = type_and_save
        result = await client.execute(
            "edit", {"filePath": str(path), "oldString": "five", "newString": "FIVE"}
        )
        assert result["isError"] is False, result["output"]
        assert path.read_text() == "zero\nONE\ntwo\nthree\nfour\nFIVE\n"
        assert client.text_of(path) == path.read_text(), "the buffer is what the disk holds"
