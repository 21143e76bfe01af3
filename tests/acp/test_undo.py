"""``toolhost acp`` and undo (issue 26): each ``session/prompt`` is a turn, and the files
the agent changed with its own built-in tool during it (not through toolhost) are put
to the ACP client after the turn as a ``session/request_permission`` (``afterTheFact``,
keep or undo), before the prompt's answer is relayed.  The scripted agent writes and
removes the files itself; standalone the proxy's own ``toolhost serve`` keeps the
turn, attached the editor's sidecar does (and the editor is not asked again).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.acp.client import AcpClient, proxy, stderr_of
from tests.acp.schema import validate_sent
from tests.acp.test_proxy import AGENT, agent_env, recording_editor, step_results

TOOLHOST = Path(sys.executable).with_name("toolhost")


def answering(*after_the_fact: str | None) -> Any:
    """A client that answers the after-the-fact reviews with ``after_the_fact`` in turn
    (None: it dismisses the review), and allows everything else."""
    answers = list(after_the_fact)

    def choose(params: dict[str, Any]) -> str | None:
        kind = (params.get("_meta") or {}).get("toolhost", {}).get("kind")
        return answers.pop(0) if kind == "afterTheFact" else "allow_once"

    return choose


def undo_list(project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    listed = subprocess.run(
        [str(TOOLHOST), "undo", "--list", "--json", "--cwd", str(project)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    checkpoints: list[dict[str, Any]] = json.loads(listed.stdout)["checkpoints"]
    return checkpoints


def outside_steps(project: Path) -> list[dict[str, Any]]:
    return [
        {"write": str(project / "a.py"), "text": "x = 5\n"},
        {"write": str(project / "made.txt"), "text": "by the agent\n"},
    ]


async def prompt_once(client: AcpClient, project: Path, steps: list[Any]) -> str:
    await client.initialize()
    session = await client.new_session(project)
    result = await client.prompt(session, json.dumps(steps))
    assert result["stopReason"] == "end_turn"
    # The review was asked, and answered, before the prompt's answer came back.
    assert client.permission_requests, stderr_of(client.sent_log.parent)
    return session


def the_review(client: AcpClient) -> dict[str, Any]:
    asked, *_ = [
        p for p in client.permission_requests if p.get("_meta", {}).get("toolhost") is not None
    ]
    assert asked["_meta"]["toolhost"]["kind"] == "afterTheFact"
    assert [(o["optionId"], o["kind"]) for o in asked["options"]] == [
        ("keep", "allow_once"),
        ("undo", "reject_once"),
    ]
    return asked


async def test_standalone_what_the_agent_changed_itself_is_reviewed_and_undone(
    project: Path, tmp_path: Path
) -> None:
    (project / "gone.txt").write_text("the user's\n")
    steps = [*outside_steps(project), {"remove": str(project / "gone.txt")}]
    env = agent_env(tmp_path)
    async with proxy(AGENT, project, env, tmp_path, choose=answering("undo")) as client:
        await prompt_once(client, project, steps)
    assert all("wrote" in r or "removed" in r for r in step_results(client))
    diffs = {d["path"]: d for d in the_review(client)["toolCall"]["content"]}
    assert diffs == {
        str(project / "a.py"): {
            "type": "diff",
            "path": str(project / "a.py"),
            "oldText": "x = 1\n",
            "newText": "x = 5\n",
        },
        str(project / "made.txt"): {
            "type": "diff",
            "path": str(project / "made.txt"),
            "oldText": None,
            "newText": "by the agent\n",
        },
        str(project / "gone.txt"): {
            "type": "diff",
            "path": str(project / "gone.txt"),
            "oldText": "the user's\n",
            "newText": "",
        },
    }
    # Undone: every file as it was before the prompt.
    assert (project / "a.py").read_text() == "x = 1\n"
    assert not (project / "made.txt").exists()
    assert (project / "gone.txt").read_text() == "the user's\n"
    # The prompt was one turn, titled with its text, its outside changes listed.
    turn, undo = undo_list(project, env)
    assert turn["title"].startswith('[{"write":') and turn["client"] == "toolhost acp", turn
    assert turn["outside"] == []  # reviewed: no longer pending
    assert (undo["kind"], undo["restores"]) == ("restore", turn["id"])  # itself undoable
    assert sorted(f["path"] for f in undo["files"]) == ["a.py", "gone.txt", "made.txt"]
    validate_sent(client.sent())


async def test_attached_the_acp_client_reviews_the_outside_changes_and_keeps_them(
    project: Path, tmp_path: Path
) -> None:
    """The editor's sidecar keeps the turn; the ACP client, whose prompt it was, is asked
    (the editor is not), and toolhost's own write in the same turn is not listed. A
    review the client dismisses changes nothing: the file stays, listed for undo."""
    editor, asked = await recording_editor(project, review=False)
    mine = {"filePath": str(project / "b.py"), "content": "y = 2\n"}
    steps = [{"mcp": "write", "args": mine}, *outside_steps(project)]
    try:
        env = {**agent_env(tmp_path), "XDG_RUNTIME_DIR": str(editor.runtime)}
        choose = answering("keep", None)
        async with proxy(AGENT, project, env, tmp_path, choose=choose) as client:
            session = await prompt_once(client, project, steps)
            second = [{"write": str(project / "later.txt"), "text": "dismissed\n"}]
            await client.prompt(session, json.dumps(second))
            assert len(client.permission_requests) == 2
            listed = await asyncio.to_thread(undo_list, project, env)
    finally:
        await editor.close()
    assert not step_results(client)[0]["isError"], step_results(client)
    diffs = {d["path"]: d for d in the_review(client)["toolCall"]["content"]}
    assert sorted(diffs) == [str(project / "a.py"), str(project / "made.txt")]
    assert asked == []  # the editor was not asked as well
    assert (project / "a.py").read_text() == "x = 5\n"  # kept
    assert (project / "made.txt").read_text() == "by the agent\n"
    assert (project / "b.py").read_text() == "y = 2\n"
    assert (project / "later.txt").read_text() == "dismissed\n"
    *_, last = listed
    assert [f["path"] for f in last["outside"]] == ["later.txt"]  # still to undo
    validate_sent(client.sent())
