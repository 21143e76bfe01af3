"""The agents' own file tools behind ``toolhost acp --keep-agent-tools``: which write
through the client's ``fs/write_text_file`` (and so through toolhost's review), and which
write to disk themselves (caught only by the after-the-fact review of the turn).

Found in the agents' source, and shown here with each real agent and a scripted model:

- Gemini CLI 0.61.0: ``write_file`` and ``replace`` write through ``fs/write_text_file``
  (and read through ``fs/read_text_file``) for a file inside the session's folder when the
  client advertises ``fs`` (``AcpFileSystemService``); outside it, or in ``~/.gemini``, on
  disk itself.  Its shell runs itself: no ``terminal/*``.  It cannot make a new file
  through a client: it reads the file first, and takes the client's "not found" error
  (an error object, not a JavaScript ``Error``) for a failure (gemini-cli issues 9280 and
  17588), so ``write_file`` of a new file fails and nothing is written; for the same
  reason a rejection reaches the model as a failure whose text is "[object Object]".
- claude-agent-acp up to 0.17.1: its Read/Edit/Write (``mcp__acp__*``) use ``fs/*`` and its
  Bash ``terminal/create`` when the client advertises them.  From 0.18.0 (0.23.1 here) it
  runs Claude Code's built-in tools, which write to disk themselves: its
  ``readTextFile``/``writeTextFile`` are never called.
- codex-acp: from 0.11.0 (0.16.0 here) Codex's own apply_patch and shell write and run
  themselves; the binary holds no ``fs/write_text_file`` or ``terminal/create``.
- OpenCode 1.18.33: writes to disk itself.  Only after its own ``edit`` permission was
  granted does it send ``fs/write_text_file``, with the same text, not waiting for the
  answer; its tool writes either way.  toolhost declines that echo (a review of it could
  not stop the write) and shows the change in the after-the-fact review of the turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp.client import AcpClient, proxy, stderr_of
from tests.acp.scenarios import assert_sandboxed, ours, prompt_once
from tests.acp.schema import validate_sent
from tests.acp.test_gemini import run_gemini
from tests.acp.test_opencode import configured_home
from tests.mcp.helpers import npm_cli, npm_install
from tests.mcp.test_claude_code import claude_env
from tests.mcp.test_opencode import HOME as OPENCODE_HOME
from tests.mcp.test_opencode import OPENCODE, opencode_env
from tests.mcp.test_opencode import VERSION as OPENCODE_VERSION
from tests.scripted_anthropic import ScriptedAnthropic
from tests.scripted_anthropic import serve as serve_anthropic
from tests.scripted_anthropic import tool_results as anthropic_results
from tests.scripted_gemini import ScriptedGemini, function_responses, serve_gemini
from tests.scripted_model import Reply, ScriptedModel, ToolCall, serve, tool_results

GEMINI_VERSION = "0.61.0"
KEEP = ("--keep-agent-tools",)


@pytest.fixture(scope="module")
def gemini() -> Path:
    return npm_cli("@google/gemini-cli", GEMINI_VERSION, "gemini-cli", "gemini")


@pytest.fixture
def gemini_model() -> Iterator[ScriptedGemini]:
    yield from serve_gemini(ScriptedGemini([]))


def client_writes(client: AcpClient) -> list[dict[str, Any]]:
    """The agent's ``fs/write_text_file`` requests, as the proxy logged them."""
    return [
        r["message"]
        for r in client.sent()
        if r["to"] == "agent" and r.get("answers") == "fs/write_text_file"
    ]


def diff(path: Path, old: str | None, new: str) -> dict[str, Any]:
    return {"type": "diff", "path": str(path), "oldText": old, "newText": new}


def after_the_fact(client: AcpClient) -> list[dict[str, Any]]:
    return [
        p
        for p in client.permission_requests
        if (p.get("_meta") or {}).get("toolhost", {}).get("kind") == "afterTheFact"
    ]


def gemini_steps(project: Path) -> list[Any]:
    """Change a.py with ``replace``, b.py with ``write_file``, then try to make c.py."""
    (project / "b.py").write_text("y = 0\n")
    return [
        ToolCall(
            "replace",
            {
                "file_path": str(project / "a.py"),
                "instruction": "change x",
                "old_string": "x = 1",
                "new_string": "x = 2",
            },
        ),
        ToolCall("write_file", {"file_path": str(project / "b.py"), "content": "y = 1\n"}),
        ToolCall("write_file", {"file_path": str(project / "c.py"), "content": "z = 1\n"}),
        Reply("Done."),
    ]


async def test_gemini_write_file_and_replace_go_through_toolhosts_review(
    gemini: Path, gemini_model: ScriptedGemini, project: Path, tmp_path: Path
) -> None:
    gemini_model.steps = gemini_steps(project)
    client = await run_gemini(gemini, project, tmp_path, gemini_model, "allow_once", KEEP)
    log = stderr_of(tmp_path)
    assert (project / "a.py").read_text() == "x = 2\n", log
    assert (project / "b.py").read_text() == "y = 1\n"
    reviews = [r["toolCall"]["content"] for r in ours(client)]
    assert reviews == [
        [diff(project / "a.py", "x = 1\n", "x = 2\n")],
        [diff(project / "b.py", "y = 0\n", "y = 1\n")],
    ], log
    assert len(client_writes(client)) == 2
    assert not after_the_fact(client)  # nothing changed outside toolhost
    # A new file: Gemini CLI 0.61 fails before it writes (its bug; nothing lands).
    assert not (project / "c.py").exists()
    assert "Error checking existing file" in function_responses(gemini_model.requests[3])[-1]


async def test_gemini_rejected_write_leaves_the_disk_and_the_model_is_told(
    gemini: Path, gemini_model: ScriptedGemini, project: Path, tmp_path: Path
) -> None:
    gemini_model.steps = gemini_steps(project)
    client = await run_gemini(gemini, project, tmp_path, gemini_model, "reject_once", KEEP)
    log = stderr_of(tmp_path)
    assert (project / "a.py").read_text() == "x = 1\n", log
    assert (project / "b.py").read_text() == "y = 0\n"
    assert len(ours(client)) == 2, log
    # The model is told both failed, but not why: Gemini CLI 0.61 turns the client's
    # error (toolhost's rejection text) into "[object Object]".
    told = [json.loads(text) for text in function_responses(gemini_model.requests[2])[-2:]]
    assert all("error" in result for result in told), told
    assert not after_the_fact(client)


# -- Claude Code ----------------------------------------------------------------------

CLAUDE_VERSION = "0.23.1"  # the adapter the other tests run
CLAUDE_THROUGH_CLIENT = "0.17.1"  # the last claude-agent-acp whose tools use fs/* and terminal/*


@pytest.fixture(scope="module")
def old_claude_adapter() -> Path:
    return npm_cli(
        "@zed-industries/claude-agent-acp",
        CLAUDE_THROUGH_CLIENT,
        "claude-agent-acp",
        "claude-agent-acp",
    )


@pytest.fixture
def claude_model() -> Iterator[ScriptedAnthropic]:
    yield from serve_anthropic(ScriptedAnthropic([], marker_tool="mcp__toolhost__read"))


async def run_claude(
    adapter: Path, project: Path, tmp_path: Path, model: ScriptedAnthropic, answer: str
) -> AcpClient:
    home = tmp_path / "home"
    home.mkdir()
    env = claude_env(
        home,
        {
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
            "IS_SANDBOX": "1",  # Claude Code refuses to start as root without it
        },
    )
    return await prompt_once([str(adapter)], project, env, tmp_path, KEEP, answer)


def claude_steps(project: Path, marker: Path) -> list[Any]:
    edit = {"file_path": str(project / "a.py"), "old_string": "x = 1", "new_string": "x = 2"}
    bash = {"command": f"sh -c 'echo pwned > {marker}'", "timeout": 60000}
    return [
        ToolCall("mcp__acp__Edit", edit),
        ToolCall("mcp__acp__Write", {"file_path": str(project / "b.py"), "content": "y = 1\n"}),
        ToolCall("mcp__acp__Bash", {**bash, "description": "write outside"}),
        Reply("Done."),
    ]


async def test_claude_0_17_edit_write_and_bash_go_through_toolhost(
    old_claude_adapter: Path, claude_model: ScriptedAnthropic, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    claude_model.steps = claude_steps(project, marker)
    client = await run_claude(old_claude_adapter, project, tmp_path, claude_model, "allow_once")
    log = stderr_of(tmp_path)
    assert (project / "a.py").read_text() == "x = 2\n", log
    assert (project / "b.py").read_text() == "y = 1\n"
    edit, write, *command = ours(client)  # the command's: run it, and write outside?
    assert edit["toolCall"]["content"][0]["newText"] == "x = 2\n"
    assert write["toolCall"]["content"][0]["oldText"] is None
    assert any(r["toolCall"]["kind"] == "execute" for r in command), command
    assert len(client_writes(client)) == 2
    assert not after_the_fact(client)
    assert_sandboxed(marker, anthropic_results(claude_model.requests[3])[-1])


async def test_claude_0_17_rejected_write_leaves_the_disk_and_the_model_is_told(
    old_claude_adapter: Path, claude_model: ScriptedAnthropic, project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    claude_model.steps = [*claude_steps(project, marker)[:2], Reply("OK.")]
    client = await run_claude(old_claude_adapter, project, tmp_path, claude_model, "reject_once")
    assert (project / "a.py").read_text() == "x = 1\n", stderr_of(tmp_path)
    assert not (project / "b.py").exists()
    assert len(ours(client)) == 2
    told = anthropic_results(claude_model.requests[2])[-2:]
    assert all("rejected" in text for text in told), told


async def test_claude_0_23_writes_to_disk_itself_caught_after_the_turn(
    claude_model: ScriptedAnthropic, project: Path, tmp_path: Path
) -> None:
    """claude-agent-acp 0.23.1's Write is Claude Code's own: no fs/write_text_file, the
    file lands at once, and only the turn's after-the-fact review shows it (undone)."""
    adapter = npm_cli(
        "@zed-industries/claude-agent-acp", CLAUDE_VERSION, "claude-agent-acp", "claude-agent-acp"
    )
    target = project / "b.py"
    claude_model.steps = [
        ToolCall("Write", {"file_path": str(target), "content": "y = 1\n"}),
        Reply("Done."),
    ]

    def choose(params: dict[str, Any]) -> str | None:
        if (params.get("_meta") or {}).get("toolhost", {}).get("kind") == "afterTheFact":
            return "undo"
        return next(o["optionId"] for o in params["options"] if o["kind"] == "allow_once")

    home = tmp_path / "home"
    home.mkdir()
    env = claude_env(
        home,
        {
            "ANTHROPIC_BASE_URL": claude_model.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
            "IS_SANDBOX": "1",
        },
    )
    async with proxy([str(adapter)], project, env, tmp_path, options=KEEP, choose=choose) as client:
        await client.initialize()
        session = await client.new_session(project)
        answer = await client.prompt(session, "Add y")
        assert answer["stopReason"] == "end_turn", stderr_of(tmp_path)
    log = stderr_of(tmp_path)
    assert not client_writes(client) and not ours(client)[:-1], log
    [review] = after_the_fact(client)
    assert review["toolCall"]["content"] == [diff(target, None, "y = 1\n")], log
    assert not target.exists(), log  # undone


# -- OpenCode -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def opencode() -> Path:
    failure = npm_install(OPENCODE_HOME, f"opencode-ai@{OPENCODE_VERSION}", OPENCODE)
    assert failure is None, f"npm install opencode-ai failed:\n{failure}"
    return OPENCODE


@pytest.fixture
def openai_model() -> Iterator[ScriptedModel]:
    yield from serve(ScriptedModel([]))


async def test_opencodes_own_edit_is_reviewed_after_the_turn_and_undone(
    opencode: Path, openai_model: ScriptedModel, project: Path, tmp_path: Path
) -> None:
    """OpenCode asks its own permission for its edit (``edit: ask``), allowed; its echo
    ``fs/write_text_file`` is declined with no review of toolhost's; the file changes on
    disk anyway, and the turn's after-the-fact review undoes it."""
    home = configured_home(tmp_path, openai_model)
    config = home / ".config" / "opencode" / "opencode.json"
    config.write_text(config.read_text().replace("gpt-5", "plain"))  # edit, not apply_patch
    env = opencode_env(project, home)
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps({"permission": {"edit": "ask"}})
    target = project / "a.py"
    edit = {"filePath": str(target), "oldString": "x = 1", "newString": "x = 2"}
    openai_model.steps = [
        ToolCall("read", {"filePath": str(target)}),
        ToolCall("edit", edit),
        Reply("Done."),
    ]

    def choose(params: dict[str, Any]) -> str | None:
        if (params.get("_meta") or {}).get("toolhost", {}).get("kind") == "afterTheFact":
            return "undo"
        return "reject_once" if params["toolCall"]["toolCallId"].startswith("toolhost-") else "once"

    async with proxy(
        [str(opencode), "acp"], project, env, tmp_path, options=KEEP, choose=choose
    ) as client:
        await client.initialize()
        session = await client.new_session(project)
        answer = await client.prompt(session, "Change x")
        assert answer["stopReason"] == "end_turn", stderr_of(tmp_path)
    validate_sent(client.sent())
    log = stderr_of(tmp_path)
    own, [review] = client.permission_requests[:-1], after_the_fact(client)
    assert [p["toolCall"]["toolCallId"].startswith("toolhost-") for p in own] == [False], log
    [echo] = client_writes(client)
    assert "writes the file itself" in echo["error"]["message"]
    assert review["toolCall"]["content"] == [diff(target, "x = 1\n", "x = 2\n")]
    assert "Edit applied successfully" in tool_results(openai_model.requests[2])[-1]
    assert target.read_text() == "x = 1\n", log  # undone
