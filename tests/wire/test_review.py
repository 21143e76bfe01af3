"""Reviews over the wire: hunks and files answered one by one, edited proposals, unsaved
buffers that are never saved for the agent, editor defaults, and the rules a person kept.

A FakeEditor (tests/wire/fake_editor.py) holds buffers and answers permission/ask with
``ask_reply``; the sidecar is the real ``toolhost serve``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.wire.fake_editor import FakeEditor, connect_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITING = {"applyEdit": True, "openDocument": True, "permissionAsk": True}
# What the editors send: review by default.
REVIEW = {"edit": "ask", "bash": {"*": "ask"}}
LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("review") / "project"
    root.mkdir()
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(root: Path):
    async with connect_editor(root, EDITING, permissionDefaults=REVIEW) as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh(editor: FakeEditor) -> None:
    editor.reset()


async def ok(client: FakeEditor, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.execute(tool, args)
    assert result["isError"] is False, result["output"]
    return result


async def read(client: FakeEditor, path: Path) -> None:
    client.ask_reply = {"reply": "once"}
    await ok(client, "read", {"filePath": str(path)})


async def test_permission_defaults_make_edits_and_commands_ask(
    editor: FakeEditor, root: Path
) -> None:
    await ok(editor, "write", {"filePath": str(root / "new.txt"), "content": "x\n"})
    await ok(editor, "bash", {"command": "echo hi", "description": "say hi"})
    assert [ask["permission"] for ask in editor.asks] == ["edit", "bash"]
    bash_ask = editor.asks[1]
    assert bash_ask["alwaysOptions"] == [
        {"id": "default", "patterns": ["echo *"], "label": "commands starting `echo`"}
    ]


async def test_a_users_own_config_overrides_the_defaults(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    async with connect_editor(
        root, EDITING, permissionDefaults=REVIEW, config={"permission": {"edit": "allow"}}
    ) as client:
        await ok(client, "write", {"filePath": str(root / "a.txt"), "content": "x\n"})
        assert client.asks == []


async def test_a_two_hunk_edit_applies_only_the_accepted_hunk(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "two.txt"
    path.write_text(LINES)
    await read(editor, path)
    editor.ask_reply = {"reply": "once", "hunks": ["two.txt#1"]}
    new = LINES.replace("line 2\n", "LINE 2\n").replace("line 18\n", "LINE 18\n")

    result = await ok(editor, "write", {"filePath": str(path), "content": new})

    ask = editor.asks[-1]
    assert [(h["id"], h["file"], h["header"]) for h in ask["metadata"]["hunks"]] == [
        ("two.txt#1", "two.txt", "@@ -1,5 +1,5 @@"),
        ("two.txt#2", "two.txt", "@@ -15,6 +15,6 @@"),
    ]
    assert "-line 18" in ask["metadata"]["hunks"][1]["lines"]
    assert path.read_text() == LINES.replace("line 2\n", "LINE 2\n")
    output = result["output"]
    assert "Applied: two.txt#1 (@@ -1,5 +1,5 @@)." in output
    assert "Not applied: two.txt#2 (@@ -15,6 +15,6 @@)." in output
    assert "18: line 18" in output  # the text around the rejected hunk, as it is now
    assert "LINE 18" not in result["metadata"]["diff"]


async def test_naming_every_hunk_is_accepting_all_of_it(editor: FakeEditor, root: Path) -> None:
    """What Neovim's answer(id, {hunks = {every hunk}}) sends: the model is not told that
    only part was applied."""
    path = root / "every.txt"
    path.write_text(LINES)
    await read(editor, path)
    editor.ask_reply = {"reply": "once", "hunks": ["every.txt#1", "every.txt#2"]}
    new = LINES.replace("line 2\n", "LINE 2\n").replace("line 18\n", "LINE 18\n")
    result = await ok(editor, "write", {"filePath": str(path), "content": new})
    assert path.read_text() == new
    assert "only part" not in result["output"]
    assert "Not applied" not in result["output"]


async def test_a_patch_is_answered_per_file(editor: FakeEditor, root: Path) -> None:
    (root / "keep.txt").write_text("keep\n")
    (root / "drop.txt").write_text("drop\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: keep.txt",
            "@@",
            "-keep",
            "+KEPT",
            "*** Update File: drop.txt",
            "@@",
            "-drop",
            "+DROPPED",
            "*** Add File: added.txt",
            "+new",
            "*** End Patch",
        ]
    )
    editor.ask_reply = {"reply": "once", "files": ["keep.txt"], "hunks": ["added.txt#1"]}

    result = await ok(editor, "apply_patch", {"patchText": patch})

    assert (root / "keep.txt").read_text() == "KEPT\n"
    assert (root / "drop.txt").read_text() == "drop\n"
    assert (root / "added.txt").read_text() == "new\n"
    assert "Files changed: keep.txt, added.txt." in result["output"]
    assert "Files left as they were: drop.txt." in result["output"]
    assert "M drop.txt" not in result["output"]  # the summary lists what was written
    assert [f["relativePath"] for f in result["metadata"]["files"]] == ["keep.txt", "added.txt"]


async def test_rejecting_every_hunk_is_a_rejection(editor: FakeEditor, root: Path) -> None:
    path = root / "none.txt"
    path.write_text("a\n")
    await read(editor, path)
    editor.ask_reply = {"reply": "once", "hunks": [], "message": "not now"}
    result = await editor.execute("write", {"filePath": str(path), "content": "b\n"})
    assert result["metadata"]["error"] == "permission_rejected"
    assert "accepted none of it" in result["output"] and "not now" in result["output"]
    assert path.read_text() == "a\n"


async def test_an_edited_proposal_is_written_and_the_model_told(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "edited.py"
    path.write_text("x = 1\n")
    await read(editor, path)
    editor.ask_reply = {"reply": "once", "edited": {"edited.py": "x = 3  # the user's\n"}}
    result = await ok(editor, "edit", {"filePath": str(path), "oldString": "1", "newString": "2"})
    assert path.read_text() == "x = 3  # the user's\n"
    assert "The user edited your proposed change to edited.py" in result["output"]
    assert "-x = 2\n+x = 3  # the user's" in result["output"]


async def test_unsaved_work_stays_out_of_the_disk(editor: FakeEditor, root: Path) -> None:
    path = root / "dirty.txt"
    path.write_text(LINES)
    uri = await editor.open(path)
    await read(editor, path)
    editor.type(path, LINES.replace("line 18\n", "line 18 typed, not saved\n"))
    await editor.call("tools/list", {})

    await ok(editor, "edit", {"filePath": str(path), "oldString": "line 2\n", "newString": "TWO\n"})

    assert editor.buffers[uri].text.startswith("line 1\nTWO\n")
    assert "line 18 typed, not saved" in editor.buffers[uri].text
    assert path.read_text() == LINES.replace("line 2\n", "TWO\n")
    assert editor.save_asks == []
    assert editor.disk_written == [uri]
    assert editor.asks[-1]["metadata"]["unsaved"] == [
        {"file": "dirty.txt", "overlaps": False, "lines": []}
    ]


@pytest.mark.parametrize("choice", ["editor", "save", None])
async def test_an_overlap_with_unsaved_work_offers_the_choices(
    editor: FakeEditor, root: Path, choice: str | None
) -> None:
    path = root / f"overlap-{choice}.txt"
    path.write_text("one\ntwo\n")
    uri = await editor.open(path)
    await read(editor, path)
    editor.type(path, "one\ntwo typed\n")
    await editor.call("tools/list", {})
    editor.ask_reply = {"reply": "once", **({"unsaved": choice} if choice else {})}

    result = await ok(
        editor, "edit", {"filePath": str(path), "oldString": "two typed", "newString": "2"}
    )

    ask = editor.asks[-1]
    assert ask["metadata"]["unsaved"] == [{"file": path.name, "overlaps": True, "lines": [[2, 2]]}]
    assert "overlaps your unsaved changes" in ask["title"]
    assert editor.buffers[uri].text == "one\n2\n"
    if choice == "save":
        assert path.read_text() == "one\n2\n"
        assert editor.save_asks == [{"uris": [uri]}]
    else:  # the default is the safe one: the editor only
        assert path.read_text() == "one\ntwo\n"
        assert editor.save_asks == []
        assert "applied in the editor only" in result["output"]


async def typed_in_unsaved(editor: FakeEditor, path: Path) -> str:
    """``path`` read by the agent, then changed by the user in the editor and not saved
    ("two" → "two typed"); an edit of that line overlaps their unsaved change. Its URI."""
    path.write_text("one\ntwo\nthree\nfour\n")
    uri = await editor.open(path)
    await read(editor, path)
    editor.type(path, "one\ntwo typed\nthree\nfour\n")
    await editor.call("tools/list", {})  # the sidecar has seen the typing
    return uri


async def test_save_saves_the_buffer_as_it_stands_not_as_it_was_asked_about(
    editor: FakeEditor, root: Path
) -> None:
    """ "save" promises the person their unsaved changes are saved with the agent's: the
    buffer as it stands when the change lands, typing done while the review waited
    included, and by the editor's own save.  Writing the buffer as it was when the ask
    went out would put some of their unsaved work on disk and leave the rest unsaved
    (the VS Code property test found it: "the user's unsaved u179 reached the disk")."""
    path = root / "overlap-typed-since.txt"
    uri = await typed_in_unsaved(editor, path)
    editor.on_ask = lambda: editor.type(path, "one\ntwo typed\nthree\nfour typed later\n")
    editor.ask_reply = {"reply": "once", "unsaved": "save"}

    await ok(editor, "edit", {"filePath": str(path), "oldString": "two typed", "newString": "2"})

    assert editor.buffers[uri].text == "one\n2\nthree\nfour typed later\n"
    assert editor.save_asks == [{"uris": [uri]}]
    assert path.read_text() == "one\n2\nthree\nfour typed later\n"


async def test_save_without_the_editors_save_writes_the_buffer_as_it_stands(
    editor: FakeEditor, root: Path
) -> None:
    """The same, with an editor that does not save: the sidecar writes the buffer only as
    it stands (the user typed nothing after the change landed); never a snapshot from
    the ask that misses what they typed since."""
    path = root / "overlap-not-saved.txt"
    uri = await typed_in_unsaved(editor, path)
    editor.on_ask = lambda: editor.type(path, "one\ntwo typed\nthree\nfour typed later\n")
    editor.ask_reply = {"reply": "once", "unsaved": "save"}
    editor.saves = False

    await ok(editor, "edit", {"filePath": str(path), "oldString": "two typed", "newString": "2"})

    assert editor.buffers[uri].text == "one\n2\nthree\nfour typed later\n"
    assert path.read_text() == "one\n2\nthree\nfour typed later\n"


async def test_save_writes_nothing_when_the_user_typed_on_and_the_editor_did_not_save(
    editor: FakeEditor, root: Path
) -> None:
    path = root / "overlap-typed-on.txt"
    uri = await typed_in_unsaved(editor, path)
    editor.ask_reply = {"reply": "once", "unsaved": "save"}
    editor.saves = False
    editor.on_save = lambda: editor.type(path, "one\n2\nthree\nfour typed on\n")

    result = await ok(
        editor, "edit", {"filePath": str(path), "oldString": "two typed", "newString": "2"}
    )

    assert editor.buffers[uri].text == "one\n2\nthree\nfour typed on\n"
    assert path.read_text() == "one\ntwo\nthree\nfour\n"
    assert "the editor did not save" in result["output"]


async def test_an_overlap_asks_even_when_the_rules_allow(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "f.txt"
    path.write_text("a\n")
    async with connect_editor(root, EDITING) as client:  # OpenCode's defaults: edits allowed
        await client.open(path)
        await ok(client, "read", {"filePath": str(path)})
        client.type(path, "a typed\n")
        await client.call("tools/list", {})
        await ok(client, "edit", {"filePath": str(path), "oldString": "a typed", "newString": "b"})
        assert len(client.asks) == 1
        assert path.read_text() == "a\n"


async def test_always_by_scope_listed_and_revoked(editor: FakeEditor, root: Path) -> None:
    editor.ask_reply = {"reply": "always", "scope": "session"}
    await ok(editor, "bash", {"command": "git --version", "description": "v"})
    editor.ask_reply = {"reply": "always", "scope": "project"}
    await ok(editor, "bash", {"command": "ls -a", "description": "list"})
    saved = json.loads((root / "opencode.json").read_text())
    assert saved["permission"] == {"bash": {"ls *": "allow"}}

    listed = (await editor.call("permission/rules", {}))["rules"]
    by_pattern = {rule["pattern"]: rule for rule in listed}
    assert by_pattern["git --version *"]["scope"] == "session"
    assert by_pattern["git --version *"]["label"] == "commands starting `git --version`"
    assert by_pattern["ls *"]["scope"] == "project"
    assert by_pattern["ls *"]["source"] == str(root / "opencode.json")

    asked = len(editor.asks)
    await ok(editor, "bash", {"command": "ls -l", "description": "list"})
    assert len(editor.asks) == asked  # covered by the saved rule

    for pattern in ("ls *", "git --version *"):
        answer = await editor.call("permission/revoke", {"id": by_pattern[pattern]["id"]})
        assert answer["revoked"] is True
    # toolhost created the file for the rule: with the rule gone, so is the file (a folder
    # with no project config has nothing an editor must ask to trust).
    assert not (root / "opencode.json").exists()
    assert (await editor.call("permission/rules", {}))["rules"] == []
    editor.ask_reply = {"reply": "once"}
    await ok(editor, "bash", {"command": "ls -l", "description": "list"})
    assert len(editor.asks) == asked + 1  # asks again
    assert (await editor.call("permission/revoke", {"id": "nope"}))["revoked"] is False


async def test_an_always_saved_for_the_project_is_not_asked_about_again(tmp_path: Path) -> None:
    """The rule the person just chose is in force at once: toolhost's own write of it is
    not reviewed as a config change that loosens a rule (the editor answering every
    further ask with "reject" would otherwise see one), and the prompt named the file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "opencode.json").write_text('{"model": "x/y"}\n')
    async with connect_editor(root, EDITING, permissionDefaults=REVIEW, trusted=True) as client:
        client.ask_reply = {"reply": "always", "scope": "project"}
        await ok(client, "bash", {"command": "ls -a", "description": "list"})
        (ask,) = client.asks
        assert ask["ruleFiles"]["project"] == str(root / "opencode.json")
        assert ask["ruleFiles"]["user"].endswith("/opencode/opencode.json")
        client.ask_reply = {"reply": "reject"}
        await asyncio.sleep(1.5)  # the watcher polls every 0.5 s
        assert [a["tool"] for a in client.asks] == ["bash"], client.asks[1:]
        await ok(client, "bash", {"command": "ls -l", "description": "again"})
        assert len(client.asks) == 1
        saved = json.loads((root / "opencode.json").read_text())
        assert saved == {"model": "x/y", "permission": {"bash": {"ls *": "allow"}}}
        # Someone else loosening the same file is still asked about.
        (root / "opencode.json").write_text(json.dumps({**saved, "permission": "allow"}))
        async with asyncio.timeout(10):
            while len(client.asks) == 1:
                await asyncio.sleep(0.05)
        assert client.asks[1]["tool"] == "toolhost"
        # Revoked: the file keeps what the person wrote, and no empty section.
        (root / "opencode.json").write_text(json.dumps(saved))
        await asyncio.sleep(1)
        rule = next(
            r
            for r in (await client.call("permission/rules", {}))["rules"]
            if r["pattern"] == "ls *"
        )
        assert (await client.call("permission/revoke", {"id": rule["id"]}))["revoked"] is True
        assert json.loads((root / "opencode.json").read_text()) == {"model": "x/y"}


async def test_a_withdrawn_ask_is_announced_by_its_id(editor: FakeEditor, root: Path) -> None:
    editor.ask_reply = None  # never answers
    try:
        await _withdraw_an_ask(editor)
    finally:
        # Answer whatever the sidecar asks next (one more ask came before it ended, in one
        # run of five): an ask still waiting when the sidecar exits is failed by pygls
        # with set_exception, which the handler's Task refuses (an error at teardown).
        editor.ask_reply = {"reply": "reject"}


async def _withdraw_an_ask(editor: FakeEditor) -> None:
    params = {"tool": "bash", "args": {"command": "true", "description": "t"}}
    call = editor.protocol.send_request("tools/execute", params, msg_id="withdraw-me")
    async with asyncio.timeout(10):
        while not editor.asks:
            await asyncio.sleep(0.02)
        editor.cancel_request(types.CancelParams(id="withdraw-me"))
        while not editor.withdrawn:
            await asyncio.sleep(0.02)
        # The cancelled call is answered too; left pending, the client's shutdown would
        # fail it as the server exits (a teardown error, depending on timing).
        while not call.done():
            await asyncio.sleep(0.02)
    assert editor.withdrawn == [editor.asks[-1]["id"]]
