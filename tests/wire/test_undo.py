"""Undo of an agent's turn over the real sidecar: every path the turn touched comes back
byte for byte (bash included), the person's own work never goes, git is left alone.

Each test is one scripted turn driven through ``toolhost serve`` as an editor drives it
(``turn/begin``, ``tools/execute`` with a ``turnID``, ``textDocument/didSave`` for the
person's saves), then ``checkpoints/list`` and ``checkpoints/restore``.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.wire.conftest import TOOLHOST, WireClient, connect, server_env

pytestmark = pytest.mark.asyncio


def tree(*roots: Path) -> dict[str, tuple[Any, ...]]:
    """Every path below ``roots`` (``.git`` left out): kind, mode, bytes' hash or target."""
    found: dict[str, tuple[Any, ...]] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                if os.path.islink(path):
                    found[path] = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    found[path] = ("dir", info.st_mode)
                else:
                    found[path] = (
                        "file",
                        info.st_mode,
                        hashlib.sha256(Path(path).read_bytes()).hexdigest(),
                    )
    return found


def git_state(root: Path) -> dict[str, bytes]:
    git = root / ".git"
    files = [git / "HEAD", git / "index", *sorted((git / "refs").rglob("*"))]
    return {str(p): p.read_bytes() for p in files if p.is_file()}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def project(base: Path) -> tuple[Path, Path]:
    root = base / "project"
    extra = base / "extra"  # an allowed_dirs folder
    (root / "src").mkdir(parents=True)
    extra.mkdir()
    for name, text in {
        "a.txt": "alpha\n",
        "b.txt": "one\ntwo\nthree\n",
        "c.txt": "moved soon\n",
        "d.txt": "deleted soon\n",
        "sed.txt": "x marks\n",
        "rm.txt": "remove me\n",
        "mv.txt": "move me\n",
        "run.sh": "#!/bin/sh\necho hi\n",
        "g.txt": "committed\n",
        "user.txt": "the person's file\n",
        "src/keep.py": "print('kept')\n",
    }.items():
        (root / name).write_text(text)
    (extra / "e.txt").write_text("extra\n")
    (root / ".opencode").mkdir()
    (root / ".opencode" / "tools.yaml").write_text(
        "tools:\n  - name: bash\n    type: builtin\n    permissions:\n"
        f'      allowed_dirs: ["{extra}"]\n'
    )
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")
    (root / "g.txt").write_text("the person's uncommitted work\n")  # git checkout drops it
    return root, extra


def save(client: WireClient, path: Path, text: str) -> None:
    """What an editor does when the person saves: the file is written, then didSave."""
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "plaintext", 1, text))
    )
    path.write_text(text)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
    )


async def ok(client: WireClient, tool: str, args: dict[str, Any], turn: str) -> dict[str, Any]:
    result = await client.execute(tool, args, turnID=turn)
    assert result["isError"] is False, result["output"]
    return result


OPTIONS = {"trusted": True, "sessionID": "ses_undo", "editor": {"permissionAsk": True}}


async def test_a_turn_with_edits_a_patch_and_bash_is_undone_exactly(tmp_path: Path) -> None:
    root, extra = project(tmp_path)
    before = tree(root, extra)
    async with connect(root, options=OPTIONS) as client:
        client.protocol.notify("turn/begin", {"turnID": "t1", "title": "A scripted turn"})
        await ok(client, "read", {"filePath": str(root / "a.txt")}, "t1")
        await ok(
            client,
            "edit",
            {"filePath": str(root / "a.txt"), "oldString": "alpha", "newString": "ALPHA"},
            "t1",
        )
        patch = (
            "*** Begin Patch\n*** Update File: b.txt\n@@\n one\n-two\n+TWO\n"
            "*** Update File: c.txt\n*** Move to: moved/c2.txt\n@@\n-moved soon\n+moved now\n"
            "*** Delete File: d.txt\n*** End Patch"
        )
        await ok(client, "apply_patch", {"patchText": patch}, "t1")
        save(client, root / "user.txt", "the person's new text\n")  # between two calls
        await ok(
            client,
            "bash",
            {
                "command": "sed -i s/x/y/ sed.txt && rm rm.txt && mv mv.txt mv2.txt && "
                "chmod 700 run.sh && git checkout -- g.txt && mkdir -p deep/er/est && "
                f"ln -s a.txt link && echo new > {extra}/e2.txt && sed -i s/extra/EXTRA/ "
                f"{extra}/e.txt && git status --short > /dev/null"
            },
            "t1",
        )
        assert (root / "g.txt").read_text() == "committed\n"
        listed = (await client.call("checkpoints/list", {}))["checkpoints"]
        (turn,) = [c for c in listed if c["turnID"] == "t1"]
        assert turn["title"] == "A scripted turn"
        assert turn["sessionID"] == "ses_undo"
        assert turn["client"]  # the client's name from initialize
        files = {f["path"]: f["action"] for f in turn["files"]}
        assert files["a.txt"] == "modified" and files["d.txt"] == "deleted"
        assert files["moved/c2.txt"] == "created" and files["rm.txt"] == "deleted"
        assert files["run.sh"] == "mode changed" and files["link"] == "created"
        assert files[str(extra / "e2.txt")] == "created"
        assert "user.txt" not in files
        git_before = git_state(root)

        dry = await client.call("checkpoints/restore", {"id": turn["id"], "dryRun": True})
        assert dry["undoID"] is None and "a.txt" in dry["restored"]
        assert (root / "a.txt").read_text() == "ALPHA\n"  # a dry run changes nothing

        result = await client.call("checkpoints/restore", {"id": turn["id"]})
        assert result["skipped"] == [], result
        assert result["undoID"]
    after = tree(root, extra)
    expected = dict(before)
    expected[str(root / "user.txt")] = after[str(root / "user.txt")]  # the person's save
    assert after == expected
    assert (root / "user.txt").read_text() == "the person's new text\n"
    assert (root / "g.txt").read_text() == "the person's uncommitted work\n"
    assert git_state(root) == git_before  # HEAD, index and refs as the restore found them


async def test_a_file_changed_since_is_skipped_forced_and_the_undo_brings_it_back(
    tmp_path: Path,
) -> None:
    root, _ = project(tmp_path)
    async with connect(root, options=OPTIONS) as client:
        changed: list[Any] = []
        client.feature("checkpoints/changed")(lambda ls, params: changed.append(params))
        await ok(client, "bash", {"command": "echo agent > a.txt && echo agent > b.txt"}, "t1")
        for _ in range(200):  # the turn's checkpoint appeared: the editors' lists refresh
            if changed:
                break
            await asyncio.sleep(0.02)
        assert changed == [{}]
        save(client, root / "a.txt", "the person's edit\n")  # after the agent changed it
        (turn,) = (await client.call("checkpoints/list", {}))["checkpoints"]

        result = await client.call("checkpoints/restore", {"id": turn["id"]})
        assert result["restored"] == ["b.txt"]
        (skipped,) = result["skipped"]
        assert skipped["path"] == "a.txt" and "you saved it" in skipped["reason"]
        assert (root / "a.txt").read_text() == "the person's edit\n"

        forced = await client.call("checkpoints/restore", {"id": turn["id"], "force": ["a.txt"]})
        assert forced["restored"] == ["a.txt"]
        assert (root / "a.txt").read_text() == "alpha\n"

        undone = await client.call("checkpoints/restore", {"id": forced["undoID"]})
        assert undone["restored"] == ["a.txt"]
        assert (root / "a.txt").read_text() == "the person's edit\n"


async def test_an_undo_puts_back_the_later_turns_too_and_never_deletes_the_persons_file(
    tmp_path: Path,
) -> None:
    root, _ = project(tmp_path)
    async with connect(root, options=OPTIONS) as client:
        await ok(client, "bash", {"command": "mkdir -p made/deep && echo a > made/deep/f"}, "t1")
        mine = root / "made" / "deep" / "mine.txt"
        mine.write_text("the person's new file\n")  # in a folder the agent made
        await ok(client, "bash", {"command": "echo later > a.txt"}, "t2")
        first, second = (await client.call("checkpoints/list", {}))["checkpoints"]
        assert (first["turnID"], second["turnID"]) == ("t1", "t2")
        # Written during t1 by no tool of toolhost: offered for review when t1 ended
        # (t2's start dates it exactly: never t2's), and the person keeps it.
        assert await review_answered(client, first["id"]) == [], first

        result = await client.call("checkpoints/restore", {"id": first["id"]})
        assert sorted(result["restored"]) == ["a.txt", "made/deep/f"], result
        reasons = {s["path"]: s["reason"] for s in result["skipped"]}
        assert sorted(reasons) == ["made", "made/deep"], result
        assert all("files the turn did not make" in r for r in reasons.values())
    assert (root / "a.txt").read_text() == "alpha\n"  # the later turn's change, put back
    assert not (root / "made" / "deep" / "f").exists()
    assert mine.read_text() == "the person's new file\n"


async def review_answered(client: WireClient, checkpoint: str) -> list[dict[str, Any]]:
    """Once the person answered the review of ``checkpoint``'s outside changes: what is
    still listed outside toolhost (what they kept is not)."""
    for _ in range(400):
        asked = [a for a in client.asks if a["metadata"].get("checkpoint") == checkpoint]
        listed = (await client.call("checkpoints/list", {}))["checkpoints"]
        (entry,) = [c for c in listed if c["id"] == checkpoint]
        if asked and not entry["open"] and not entry["outside"]:
            return list(entry["outside"])
        await asyncio.sleep(0.025)
    raise AssertionError(f"the review of {checkpoint} was not answered: {client.asks}")


async def test_a_restore_leaves_a_file_the_person_is_still_being_asked_about(
    tmp_path: Path,
) -> None:
    """Changes outside toolhost are offered for review when their turn ends; until the
    person answers, an undo of the turn leaves them (it may be their own work)."""
    root, _ = project(tmp_path)
    async with connect(root, options=OPTIONS) as client:
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        client.ask_reply = answer  # the review stays open until the end
        await ok(client, "bash", {"command": "echo agent > a.txt"}, "t1")
        (root / "mine.txt").write_text("written beside the agent\n")
        await ok(client, "bash", {"command": "echo later > b.txt"}, "t2")  # t1 ends
        await asyncio.wait_for(client.asked.wait(), 10)
        (first, _) = (await client.call("checkpoints/list", {}))["checkpoints"]
        assert [f["path"] for f in first["outside"]] == ["mine.txt"]
        result = await client.call("checkpoints/restore", {"id": first["id"]})
        assert sorted(result["restored"]) == ["a.txt", "b.txt"], result
        (skipped,) = result["skipped"]
        assert skipped["path"] == "mine.txt" and "not answered the review" in skipped["reason"]
        assert (root / "mine.txt").read_text() == "written beside the agent\n"
        forced = await client.call(
            "checkpoints/restore", {"id": first["id"], "force": ["mine.txt"]}
        )
        assert forced["restored"] == ["mine.txt"] and not (root / "mine.txt").exists()
        answer.set_result({"reply": "once"})


def objects(root: Path) -> set[str]:
    return {str(p) for p in (root / ".git" / "objects").rglob("*") if p.is_file()}


async def test_a_commit_the_agent_made_is_listed_and_git_is_left_as_it_is(tmp_path: Path) -> None:
    """The worktree's files come back; HEAD, refs, index and objects stay as the agent's
    commit left them, for the person to undo with git (the turn says HEAD moved)."""
    root, _ = project(tmp_path)
    head = (root / ".git" / "HEAD").read_text()
    async with connect(root, options=OPTIONS) as client:
        commit = "git -c user.email=a@t -c user.name=agent commit -qam agent"
        await ok(client, "bash", {"command": f"echo agent > a.txt && {commit}"}, "t1")
        client.protocol.notify("turn/begin", {"turnID": "t2", "title": "next"})  # t1 ends
        for _ in range(200):
            (turn,) = (await client.call("checkpoints/list", {}))["checkpoints"]
            if not turn["open"]:
                break
            await asyncio.sleep(0.05)
        git_after, objects_after = git_state(root), objects(root)
        moved = turn["git"]
        assert moved and moved["before"] != moved["after"], turn
        result = await client.call("checkpoints/restore", {"id": turn["id"]})
        assert "a.txt" in result["restored"], result
    assert (root / "a.txt").read_text() == "alpha\n"
    assert git_state(root) == git_after and objects(root) == objects_after
    assert (root / ".git" / "HEAD").read_text() == head  # the branch, not detached


async def watching(client: WireClient) -> None:
    """Until the open turn's first scan is done (it runs beside the turn's calls)."""
    for _ in range(200):
        (turn, *_) = (await client.call("checkpoints/list", {}))["checkpoints"]
        if turn.get("watching"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the turn's first scan did not finish")


async def test_a_change_made_outside_toolhost_is_listed_and_undone(tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    no_review = {k: v for k, v in OPTIONS.items() if k != "editor"}  # nobody to ask
    async with connect(root, options=no_review) as client:
        await ok(
            client,
            "bash",
            {"command": "echo agent > a.txt"},
            "t1",
        )
        await watching(client)
        subprocess.run(["sh", "-c", f"echo script > {root}/b.txt"], check=True)  # not toolhost
        save(client, root / "user.txt", "saved in the editor\n")
        client.protocol.notify("turn/begin", {"turnID": "t2", "title": "next"})  # t1 ends
        for _ in range(200):
            (turn, *_) = (await client.call("checkpoints/list", {}))["checkpoints"]
            if not turn["open"]:
                break
            await asyncio.sleep(0.05)
        assert [f["path"] for f in turn["outside"]] == ["b.txt"]
        assert turn["outside"][0]["action"] == "modified"
        result = await client.call("checkpoints/restore", {"id": turn["id"]})
        assert sorted(result["restored"]) == ["a.txt", "b.txt"]
    assert (root / "b.txt").read_text() == "one\ntwo\nthree\n"
    assert (root / "a.txt").read_text() == "alpha\n"
    assert (root / "user.txt").read_text() == "saved in the editor\n"


async def test_outside_changes_are_reviewed_after_the_turn_per_file_and_hunk(
    tmp_path: Path,
) -> None:
    root, _ = project(tmp_path)
    lines = [f"line {n}\n" for n in range(1, 21)]
    (root / "long.txt").write_text("".join(lines))
    async with connect(root, options=OPTIONS) as client:
        await ok(client, "bash", {"command": "echo agent > a.txt"}, "t1")
        await watching(client)
        edited = [*lines]
        edited[1], edited[17] = "LINE 2\n", "LINE 18\n"  # two hunks, far apart
        (root / "long.txt").write_text("".join(edited))  # an agent's own edit tool
        (root / "b.txt").write_text("from a script\n")
        save(client, root / "user.txt", "saved in the editor\n")
        client.ask_reply = {"reply": "once", "hunks": ["long.txt#1"]}  # keep one hunk only
        client.protocol.notify("turn/begin", {"turnID": "t2", "title": "next"})
        for _ in range(200):
            review = [a for a in client.asks if a["metadata"].get("kind") == "afterTheFact"]
            if review:
                break
            await asyncio.sleep(0.05)
        (ask,) = review
        assert ask["tool"] == "toolhost" and "b.txt" in ask["title"]
        files = {f["relativePath"]: f for f in ask["metadata"]["files"]}
        assert sorted(files) == ["b.txt", "long.txt"]  # not the person's save, not toolhost's
        assert files["b.txt"]["before"] == "one\ntwo\nthree\n"
        assert [h["id"] for h in ask["metadata"]["hunks"]] == [
            "b.txt#1",
            "long.txt#1",
            "long.txt#2",
        ]
        assert [o["id"] for o in ask["metadata"]["options"]] == ["keep", "undo"]
        for _ in range(200):
            if (root / "b.txt").read_text() == "one\ntwo\nthree\n":
                break
            await asyncio.sleep(0.05)
        kept = [*lines]
        kept[1] = "LINE 2\n"
        assert (root / "long.txt").read_text() == "".join(kept)  # hunk 2 undone, 1 kept
        assert (root / "b.txt").read_text() == "one\ntwo\nthree\n"  # undone
        assert (root / "user.txt").read_text() == "saved in the editor\n"
        (turn, *_) = (await client.call("checkpoints/list", {}))["checkpoints"]
        assert turn["outside"] == []  # settled


async def test_toolhost_undo_at_the_shell(tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    data = tmp_path / "toolhost-data"
    async with connect(root, options=OPTIONS, data_dir=data) as client:
        await ok(client, "bash", {"command": "rm a.txt && echo new > new.txt"}, "t1")

    def undo(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(TOOLHOST), "undo", *args, "--cwd", str(root)],
            capture_output=True,
            text=True,
            env=server_env(data),
            check=False,
        )

    listed = undo("--list")
    assert listed.returncode == 0, listed.stderr
    checkpoint = listed.stdout.split()[0]
    assert checkpoint.startswith("chk_") and "deleted  a.txt" in listed.stdout
    dry = undo("--turn", checkpoint, "--dry-run")
    assert "would put back: a.txt" in dry.stdout and not (root / "a.txt").exists()
    done = undo()
    assert done.returncode == 0, done.stderr
    assert "put back: a.txt" in done.stdout and "put back: new.txt" in done.stdout
    assert (root / "a.txt").read_text() == "alpha\n" and not (root / "new.txt").exists()
    again = undo("--turn", done.stdout.split("--turn ")[1].strip())  # the undo, undone
    assert again.returncode == 0 and not (root / "a.txt").exists()
    missing = undo("--turn", "chk_nope")
    assert missing.returncode == 2 and "toolhost undo --list" in missing.stderr


async def test_a_command_allowed_to_write_more_does_not_run_its_first_part_twice(
    tmp_path: Path,
) -> None:
    root, _ = project(tmp_path)
    outside = tmp_path / "x"
    outside.mkdir()
    command = f"echo RAN >> ran.txt; python3 -c \"open('{outside}/' + 'out', 'w')\""
    async with connect(root, options=OPTIONS) as client:
        result = await ok(client, "bash", {"command": command}, "t1")
        rerun = client.asks[-1]
        assert rerun["metadata"]["rerun"] is True
        assert "ran.txt (created)" in rerun["title"] and "put back" in rerun["title"]
        assert rerun["metadata"]["firstRun"] == [{"path": "ran.txt", "action": "created"}]
        assert (root / "ran.txt").read_text() == "RAN\n"  # once, not twice
        assert (outside / "out").exists()
        assert "nothing it did happened twice" in result["output"]

        # Nothing is removed between the two calls: that would be a change outside review.
        second = command.replace("ran.txt", "ran2.txt").replace("'out'", "'out2'")
        client.ask_reply = {"reply": "reject"}
        rejected = await client.execute("bash", {"command": second}, turnID="t2")
        client.ask_reply = {"reply": "once"}
        assert "first run's changes stay: ran2.txt (created)" in rejected["output"]
        assert "put back (1 path)," in result["output"]
        # The person who said no is told too, in words for them, once prefixed.
        shown = [m["message"] if isinstance(m, dict) else m.message for m in client.messages]
        told = [m for m in shown if "did not run again" in m]
        assert told == [
            f"toolhost: You did not allow writing to {outside}, so the command did not run "
            "again. Its first run's changes stay: ran2.txt (created)."
        ], shown
        assert (root / "ran2.txt").read_text() == "RAN\n" and not (outside / "out2").exists()


async def test_a_client_attached_over_the_socket_marks_turns_lists_and_restores(
    tmp_path: Path,
) -> None:
    """What ``toolhost acp`` does when attached to the editor's sidecar: ``turn/begin`` per
    prompt, its calls, then ``checkpoints/list`` and ``checkpoints/restore``."""
    from tests.mcp.test_attach import raw_session, sidecar_lock

    root, _ = project(tmp_path)
    async with connect(root, options=OPTIONS):
        lock = await sidecar_lock(root)
        assert lock.socket
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"initializationOptions": {"token": lock.token, "sessionID": "ses_acp"}},
        }

        async def ask(*messages: dict[str, Any]) -> dict[str, Any]:
            answers = await raw_session(str(lock.socket), [hello, *messages])
            (answer,) = [a for a in answers if a.get("id") == 2]
            assert "error" not in answer, answer
            return answer["result"]  # type: ignore[no-any-return]

        begin = {"method": "turn/begin", "params": {"turnID": "prompt_1", "title": "Fix it"}}
        call = {"tool": "bash", "args": {"command": "echo acp > a.txt"}}
        await ask(
            {"jsonrpc": "2.0", **begin},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/execute", "params": call},
        )
        listed = await ask({"jsonrpc": "2.0", "id": 2, "method": "checkpoints/list", "params": {}})
        (turn,) = listed["checkpoints"]
        assert (turn["turnID"], turn["title"], turn["sessionID"]) == (
            "prompt_1",
            "Fix it",
            "ses_acp",
        )
        restore = {"id": turn["id"]}
        done = await ask(
            {"jsonrpc": "2.0", "id": 2, "method": "checkpoints/restore", "params": restore}
        )
        assert done["restored"] == ["a.txt"]
    assert (root / "a.txt").read_text() == "alpha\n"
