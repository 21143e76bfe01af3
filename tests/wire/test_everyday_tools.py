"""The everyday tools over the wire: bash, webfetch, apply_patch, todos and skills.

One ``toolhost serve`` for the module, driven as an editor's agent panel drives it.
The server asks before the third identical call in a row (doom loop), and this
client cannot answer asks, so every call here differs from the one before it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.http_server import Handler, LocalServer
from tests.wire.conftest import WireClient, connect, make_project

pytestmark = pytest.mark.asyncio(loop_scope="module")

RESULT_KEYS = {"title", "output", "metadata", "attachments", "isError"}
# A model that is not offered apply_patch by tools/list; tools/execute runs it anyway.
CLAUDE = {"providerID": "anthropic", "modelID": "claude-sonnet-4"}
PAGE = (
    b"<html><head><title>Greeting</title></head><body><h1>Hello</h1>"
    b"<p>Some <b>bold</b> text and <a href='/next'>a link</a>.</p>"
    b"<script>alert('never shown')</script></body></html>"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("everyday"))
    # Before the server starts: the skill must be found without any refresh.
    skill = root / ".opencode" / "skills" / "demo" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: demo\ndescription: Demo skill\n---\n\n# Demo\n\nSay hello politely.\n"
    )
    (skill.parent / "helper.sh").write_text("echo helper\n")
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root, options={"sessionID": "ses_everyday"}) as client:
        yield client


@pytest.fixture(scope="module")
def web() -> Iterator[LocalServer]:
    server = LocalServer()

    @server.route("/page")
    def page(handler: Handler) -> None:
        handler.reply(200, PAGE, "text/html; charset=utf-8")

    server.start()
    yield server
    server.stop()


def ok(result: dict) -> dict:
    assert set(result) == RESULT_KEYS
    assert result["isError"] is False, result["output"]
    return result


async def bash(client: WireClient, command: str, **args: object) -> dict:
    return await client.execute("bash", {"command": command, "description": "Test", **args})


# ---------------------------------------------------------------- bash


async def test_bash_echo(client: WireClient) -> None:
    result = ok(await bash(client, "echo hello"))
    assert result["output"] == "hello\n"
    assert result["metadata"]["exit"] == 0
    assert result["metadata"]["truncated"] is False
    assert "timedOut" not in result["metadata"]


async def test_bash_nonzero_exit_is_not_an_error(client: WireClient) -> None:
    result = ok(await bash(client, "exit 3"))
    assert result["metadata"]["exit"] == 3
    assert result["output"] == "(no output)"


async def test_bash_timeout_ends_the_command_with_a_note(client: WireClient) -> None:
    started = time.monotonic()
    result = ok(await bash(client, "sleep 5", timeout=500))
    assert time.monotonic() - started < 2
    assert result["metadata"]["timedOut"] is True
    assert (
        "<shell_metadata>\nshell tool terminated command after exceeding timeout 500 ms."
        in result["output"]
    )
    assert result["output"].endswith("</shell_metadata>")


async def test_bash_long_output_is_truncated_and_saved_whole(client: WireClient) -> None:
    full = "".join(f"{n}\n" for n in range(1, 5001))
    result = ok(await bash(client, "seq 1 5000"))
    metadata = result["metadata"]
    assert metadata["truncated"] is True
    saved = Path(metadata["outputPath"])
    assert saved.read_text() == full
    # OpenCode 1.18.33 keeps the tail, after its marker.
    assert result["output"].startswith(f"...output truncated...\n\nFull output saved to: {saved}")
    assert result["output"].endswith("\n4999\n5000\n")
    assert "\n1\n2\n3\n" not in result["output"]
    assert len(result["output"]) < len(full)


async def test_a_read_is_answered_while_bash_runs(client: WireClient, root: Path) -> None:
    running = asyncio.create_task(bash(client, "sleep 2"))
    try:
        await asyncio.sleep(0.2)  # the command has been sent and is running
        started = time.monotonic()
        result = ok(await client.execute("read", {"filePath": str(root / "notes.txt")}))
        elapsed = time.monotonic() - started
        assert "1: alpha" in result["output"]
        assert elapsed < 0.5, f"the read waited {elapsed:.2f} s for the running command"
        assert not running.done()
    finally:
        finished = ok(await running)
    assert finished["metadata"]["exit"] == 0


# ---------------------------------------------------------------- webfetch


async def test_webfetch_converts_html_to_markdown(client: WireClient, web: LocalServer) -> None:
    url = web.url("/page")
    result = ok(await client.execute("webfetch", {"url": url}))
    assert result["title"].startswith(f"{url} (text/html")
    assert result["title"] == f"{url} (text/html; charset=utf-8)"
    assert "# Hello" in result["output"]
    assert "Some **bold** text and [a link](/next)." in result["output"]
    assert "<p>" not in result["output"]
    assert "never shown" not in result["output"]
    assert web.paths()[-1] == "/page"


async def test_webfetch_404_is_an_error(client: WireClient, web: LocalServer) -> None:
    result = await client.execute("webfetch", {"url": web.url("/missing")})
    assert result["isError"] is True
    assert "Request failed with status code: 404" in result["output"]


# ---------------------------------------------------------------- apply_patch


async def test_apply_patch_runs_for_any_model(client: WireClient, root: Path) -> None:
    listed = await client.tool_ids(model=CLAUDE)
    assert "apply_patch" not in listed  # offered to GPT models only...
    (root / "patch-me.txt").write_text("first\nsecond\nthird\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Add File: added/new.txt",
            "+brand",
            "+new",
            "*** Update File: patch-me.txt",
            "@@",
            " first",
            "-second",
            "+SECOND",
            " third",
            "*** End Patch",
        ]
    )
    # ...but run for any model that calls it.
    result = ok(await client.execute("apply_patch", {"patchText": patch}, model=CLAUDE))
    assert (root / "added" / "new.txt").read_text() == "brand\nnew\n"
    assert (root / "patch-me.txt").read_text() == "first\nSECOND\nthird\n"
    assert result["output"].splitlines()[:3] == [
        "Success. Updated the following files:",
        "A added/new.txt",
        "M patch-me.txt",
    ]
    assert "-second\n+SECOND" in result["metadata"]["diff"]


async def test_apply_patch_updates_what_an_earlier_patch_added(
    client: WireClient, root: Path
) -> None:
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: added/new.txt",
            "@@",
            " brand",
            "-new",
            "+newer",
            "*** End Patch",
        ]
    )
    result = ok(await client.execute("apply_patch", {"patchText": patch}))
    assert (root / "added" / "new.txt").read_text() == "brand\nnewer\n"
    assert result["output"].splitlines()[:2] == [
        "Success. Updated the following files:",
        "M added/new.txt",
    ]


# ---------------------------------------------------------------- todos


async def test_todos_belong_to_their_session(client: WireClient) -> None:
    todos = [
        {"content": "Write the parser", "status": "in_progress", "priority": "high"},
        {"content": "Document it", "status": "pending", "priority": "low"},
    ]
    written = ok(await client.execute("todowrite", {"todos": todos}, sessionID="ses_todo"))
    assert written["title"] == "2 todos"
    read = ok(await client.execute("todoread", {}, sessionID="ses_todo"))
    assert read["metadata"]["todos"] == todos
    assert [item["content"] for item in read["metadata"]["todos"]] == [
        "Write the parser",
        "Document it",
    ]
    assert '"content": "Write the parser"' in read["output"]
    other = ok(await client.execute("todoread", {}, sessionID="ses_other_todo"))
    assert other["output"] == "[]"
    assert other["metadata"]["todos"] == []


# ---------------------------------------------------------------- skill


async def test_skill_is_listed_and_loads(client: WireClient, root: Path) -> None:
    listed = await client.call("tools/list", {})
    (skill,) = [tool for tool in listed["tools"] if tool["id"] == "skill"]
    assert "- **demo**: Demo skill" in skill["description"]

    result = ok(await client.execute("skill", {"name": "demo"}))
    output = result["output"]
    assert output.startswith('<skill_content name="demo">\n# Skill: demo\n')
    assert "Say hello politely." in output
    assert "---" not in output  # the front matter is not part of the content
    assert f"<file>{root / '.opencode/skills/demo/helper.sh'}</file>" in output
    assert output.endswith("</skill_content>")
    assert result["title"] == "Loaded skill: demo"
