"""``toolhost mcp --no-attach`` driven by the official MCP Python SDK's client.

Every test spawns the installed ``toolhost mcp`` over stdio in a temp project, as
an MCP host does, and talks to it with ``mcp.ClientSession``.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.custom_tool_helpers import write
from tests.mcp.helpers import TOOLHOST, mcp_client, text_of
from tests.tools.test_read import tiny_png

pytestmark = pytest.mark.anyio

NO_ATTACH = "--no-attach"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def catalogue(root: Path) -> list[dict[str, Any]]:
    listing = subprocess.run(
        [str(TOOLHOST), "list", "--json", "--cwd", str(root)],
        check=True,
        capture_output=True,
        text=True,
    )
    tools: list[dict[str, Any]] = json.loads(listing.stdout)["tools"]
    return tools


async def test_the_tools_are_the_catalogue_of_toolhost_list(worktree: Path) -> None:
    async with mcp_client(worktree, NO_ATTACH, initialize=False) as client:
        init = await client.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "toolhost"
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed
        listed = (await client.list_tools()).tools
    expected = catalogue(worktree)
    assert [tool.name for tool in listed] == [tool["id"] for tool in expected]
    for tool, entry in zip(listed, expected, strict=True):
        assert tool.description == entry["description"]
        assert tool.input_schema == entry["parameters"]  # unchanged: enums, items, nesting
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == entry["annotations"]["readOnlyHint"]
        assert tool.annotations.destructive_hint == entry["annotations"]["destructiveHint"]
    by_name = {tool.name: tool for tool in listed}
    assert by_name["read"].title == "Read file"
    assert by_name["read"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert by_name["bash"].annotations.open_world_hint is True  # type: ignore[union-attr]
    todos = by_name["todowrite"].input_schema["properties"]["todos"]
    assert todos["type"] == "array" and "enum" in json.dumps(todos["items"])


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_each_handshake_revision_is_negotiated(worktree: Path, version: str) -> None:
    (worktree / "a.txt").write_text("alpha\n")
    async with mcp_client(worktree, NO_ATTACH, initialize=False) as client:
        init = await client.send_request(
            types.InitializeRequest(
                params=types.InitializeRequestParams(
                    protocol_version=version,
                    capabilities=types.ClientCapabilities(),
                    client_info=types.Implementation(name="test", version="1"),
                )
            ),
            types.InitializeResult,
        )
        assert init.protocol_version == version
        client.adopt(init)
        await client.send_notification(types.InitializedNotification())
        tools = (await client.list_tools()).tools
        assert tools[1].name == "read" and tools[1].title == "Read file"
        result = await client.call_tool("read", {"filePath": str(worktree / "a.txt")})
    assert not result.is_error
    assert "1: alpha" in text_of(result)


async def test_the_stateless_2026_revision_is_served(worktree: Path) -> None:
    (worktree / "a.txt").write_text("alpha\n")
    async with mcp_client(worktree, NO_ATTACH, initialize=False) as client:
        discovered = await client.discover()
        assert discovered.supported_versions == ["2026-07-28"]
        client.adopt(discovered)
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("read", {"filePath": "a.txt"})
    assert "read" in names and "edit" in names
    assert "1: alpha" in text_of(result)


async def test_read_then_edit_changes_the_file_and_reports_the_diff(worktree: Path) -> None:
    target = worktree / "app.py"
    target.write_text("def greet():\n    return 'hi'\n")
    async with mcp_client(worktree, NO_ATTACH) as client:
        read = await client.call_tool("read", {"filePath": str(target)})
        edit = await client.call_tool(
            "edit",
            {"filePath": str(target), "oldString": "'hi'", "newString": "'hello'"},
        )
    assert "2:     return 'hi'" in text_of(read)
    assert not edit.is_error, text_of(edit)
    assert target.read_text() == "def greet():\n    return 'hello'\n"
    assert edit.meta is not None
    metadata = edit.meta["toolhost/metadata"]
    assert "+    return 'hello'" in metadata["diff"]
    assert metadata["filediff"][0]["additions"] == 1
    assert edit.meta["toolhost/title"] == "app.py"


async def test_an_image_comes_back_as_an_image_block(worktree: Path) -> None:
    (worktree / "pixel.png").write_bytes(tiny_png())
    async with mcp_client(worktree, NO_ATTACH) as client:
        result = await client.call_tool("read", {"filePath": "pixel.png"})
    images = [block for block in result.content if block.type == "image"]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == tiny_png()


async def test_tool_errors_are_results_that_tell_the_model_what_to_do(worktree: Path) -> None:
    write(worktree / "opencode.json", json.dumps({"tools": {"webfetch": False}}))
    async with mcp_client(worktree, NO_ATTACH) as client:
        unknown = await client.call_tool("nope", {})
        missing = await client.call_tool("read", {})
        disabled = await client.call_tool("webfetch", {"url": "http://127.0.0.1:9/"})
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert unknown.is_error and "unavailable tool 'nope'" in text_of(unknown)
    assert "Available tools: bash, read" in text_of(unknown)
    assert missing.is_error and "filePath" in text_of(missing)
    assert disabled.is_error and "disabled in this project's configuration" in text_of(disabled)
    assert "webfetch" not in names


SHOUT = """
    from pydantic import BaseModel, Field
    from tools import tool

    class Args(BaseModel):
        word: str = Field(description="what to shout")

    async def run(args, ctx):
        return args.word.upper()

    default = tool(description="Shouts a word", args=Args, execute=run)
"""


async def test_list_changed_is_sent_when_the_config_changes(worktree: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with mcp_client(worktree, NO_ATTACH, message_handler=on_message) as client:
        before = [tool.name for tool in (await client.list_tools()).tools]
        write(worktree / "opencode.json", json.dumps({"tools": {"webfetch": False}}))
        with anyio.fail_after(15):
            await changed.wait()
        after = [tool.name for tool in (await client.list_tools()).tools]
    assert "webfetch" in before and "webfetch" not in after


async def test_custom_tools_load_at_start_and_new_tool_code_waits(worktree: Path) -> None:
    write(worktree / ".opencode/tools/shout.py", SHOUT)
    # A folder with tool files of its own is not trusted until a person says so.
    async with mcp_client(worktree, NO_ATTACH) as client:
        untrusted = [tool.name for tool in (await client.list_tools()).tools]
    assert "shout" not in untrusted
    async with mcp_client(worktree, NO_ATTACH, "--trusted") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        shouted = await client.call_tool("shout", {"word": "hey"})
        # Tool code that appears while it runs (an agent could write it) is not loaded.
        write(worktree / ".opencode/tools/whisper.py", SHOUT.replace("upper", "lower"))
        await anyio.sleep(2.5)
        later = [tool.name for tool in (await client.list_tools()).tools]
    assert tools["shout"].input_schema["properties"]["word"]["type"] == "string"
    assert text_of(shouted) == "HEY"
    assert "whisper" not in later


async def test_progress_reaches_the_client_before_the_result(worktree: Path) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with mcp_client(worktree, NO_ATTACH) as client:
        result = await client.call_tool(
            "bash",
            {"command": "echo one; sleep 0.4; echo two; sleep 0.4", "description": "Count"},
            progress_callback=on_progress,
        )
    assert not result.is_error
    messages = [message for _, message in seen]
    assert "one" in messages and "two" in messages
    assert messages.index("one") < messages.index("two")
    assert [progress for progress, _ in seen] == sorted(progress for progress, _ in seen)


async def test_a_cancelled_call_stops_the_command(worktree: Path) -> None:
    marker = worktree / "finished"
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message == "started":
            started.set()

    async with mcp_client(worktree, NO_ATTACH) as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool(
                    "bash",
                    {"command": f"echo started; sleep 2; touch {marker}", "description": "Wait"},
                    progress_callback=on_progress,
                )

            group.start_soon(call)
            with anyio.fail_after(15):
                await started.wait()
            group.cancel_scope.cancel()
        await anyio.sleep(3)
        assert not marker.exists()  # the command was ended, not left running
        still = await client.call_tool("bash", {"command": "echo alive", "description": "Echo"})
    assert text_of(still).strip() == "alive"


def ask_config(worktree: Path) -> None:
    write(worktree / "opencode.json", json.dumps({"permission": {"edit": "ask"}}))


async def test_an_ask_becomes_an_elicitation_when_the_client_can_show_one(worktree: Path) -> None:
    ask_config(worktree)
    target = worktree / "a.txt"
    target.write_text("one\n")
    prompts: list[types.ElicitRequestFormParams] = []
    answers = iter(["once", "reject"])

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        prompts.append(params)
        decision = next(answers)
        content = {"decision": decision}
        if decision == "reject":
            content["message"] = "use two instead"
        return types.ElicitResult(action="accept", content=content)

    async with mcp_client(worktree, NO_ATTACH, elicitation_callback=elicit) as client:
        await client.call_tool("read", {"filePath": str(target)})
        allowed = await client.call_tool(
            "edit", {"filePath": str(target), "oldString": "one", "newString": "uno"}
        )
        rejected = await client.call_tool(
            "edit", {"filePath": str(target), "oldString": "uno", "newString": "eins"}
        )
    assert not allowed.is_error, text_of(allowed)
    assert rejected.is_error and "use two instead" in text_of(rejected)
    assert target.read_text() == "uno\n"
    assert len(prompts) == 2
    assert "-one" in prompts[0].message and "+uno" in prompts[0].message
    schema = prompts[0].requested_schema["properties"]["decision"]
    assert [choice["const"] for choice in schema["oneOf"]] == ["once", "always", "reject"]


async def test_an_ask_without_elicitation_is_rejected_saying_how_to_allow_it(
    worktree: Path,
) -> None:
    ask_config(worktree)
    target = worktree / "a.txt"
    target.write_text("one\n")
    async with mcp_client(worktree, NO_ATTACH) as client:
        await client.call_tool("read", {"filePath": str(target)})
        result = await client.call_tool(
            "edit", {"filePath": str(target), "oldString": "one", "newString": "uno"}
        )
    assert result.is_error
    text = text_of(result)
    assert "elicitation" in text and "opencode.json" in text
    assert '{"permission": {"edit": {"a.txt": "allow"}}}' in text
    assert target.read_text() == "one\n"
