"""Custom Python tools over the wire: the documented greet example, multi-export files,
helper scripts, broken files, the global dir, hot reload, and ``toolhost list``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.custom_tool_helpers import GREET, write
from tests.wire.conftest import (
    WireClient,
    connect,
    make_project,
    run_toolhost,
)

# The async tests share one server (module scope); the CLI test is synchronous.
module_loop = pytest.mark.asyncio(loop_scope="module")

MATH = """
    from pydantic import Field
    from tools import tool

    NUMBERS = {
        "a": (int, Field(description="The first number")),
        "b": (int, Field(description="The second number")),
    }

    def _add(args, ctx):
        return str(args.a + args.b)

    async def _multiply(args, ctx):
        return str(args.a * args.b)

    add = tool(description="Add two numbers", args=NUMBERS, execute=_add)
    multiply = tool(description="Multiply two numbers", args=NUMBERS, execute=_multiply)
"""

# The Python script behind a wrapper in our users' docs: no tool in it.
SCRIPT = """
    import sys

    print("hello from a helper script", file=sys.stderr)
    sys.exit(3)
"""

BROKEN = """
    from tools import tool

    default = tool(description="never loads", execute=lambda args, ctx: "x"
"""


def tool_source(description: str, output: str) -> str:
    return f"""
        from tools import tool

        default = tool(description={description!r}, execute=lambda args, ctx: {output!r})
    """


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("custom")


@pytest.fixture(scope="module")
def root(base: Path) -> Path:
    root = make_project(base)
    tools = root / ".opencode" / "tools"
    write(tools / "greet.py", GREET)
    write(tools / "math.py", MATH)
    write(tools / "script.py", SCRIPT)
    write(tools / "broken.py", BROKEN)
    write(base / "xdg" / "opencode" / "tools" / "hello.py", tool_source("Says hello", "hi"))
    return root


@pytest.fixture(scope="module", autouse=True)
def hermetic(base: Path) -> Any:
    """The spawned servers read the global dir from here, not the developer's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path) -> AsyncIterator[WireClient]:
    async with connect(root, options={"trusted": True}) as client:
        yield client


async def listing(client: WireClient) -> dict[str, dict[str, Any]]:
    tools = (await client.call("tools/list", {}))["tools"]
    return {tool["id"]: tool for tool in tools}


@module_loop
async def test_greet_over_the_wire(client: WireClient) -> None:
    greet = (await listing(client))["greet"]
    assert greet["description"] == "返回问候语"
    assert greet["parameters"] == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "用户名字"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert greet["kind"] == "other"
    before = time.time()
    result = await client.execute("greet", {"name": "小明"})
    assert result["isError"] is False, result["output"]
    assert result["output"] == "你好，小明！"
    assert result["title"] == "问候"
    assert before - 1 <= result["metadata"]["timestamp"] <= time.time() + 1


@module_loop
async def test_greet_validates_its_arguments(client: WireClient) -> None:
    result = await client.execute("greet", {})
    assert result["isError"] is True
    assert result["metadata"]["error"] == "invalid_arguments"
    assert "name" in result["output"]


@module_loop
async def test_a_file_with_several_tools(client: WireClient) -> None:
    tools = await listing(client)
    for name in ("math_add", "math_multiply"):
        schema = tools[name]["parameters"]
        assert schema["required"] == ["a", "b"]
        assert schema["properties"]["a"] == {"type": "integer", "description": "The first number"}
    assert (await client.execute("math_add", {"a": 2, "b": 3}))["output"] == "5"
    assert (await client.execute("math_multiply", {"a": 4, "b": 5}))["output"] == "20"


@module_loop
async def test_order_helper_script_and_broken_file(client: WireClient, root: Path) -> None:
    ids = list(await listing(client))
    custom = ["greet", "hello", "math_add", "math_multiply"]
    assert ids[-len(custom) :] == custom  # after the built-ins, sorted by id
    assert "read" in ids and "script" not in ids and "broken" not in ids
    # The broken file is shown once, as a warning; the helper script is not mentioned.
    [shown] = client.messages
    assert shown.type == types.MessageType.Warning
    assert str(root / ".opencode" / "tools" / "broken.py") in shown.message
    assert "script.py" not in shown.message
    assert any("broken.py" in m.message for m in client.log_messages)


@module_loop
async def test_the_global_tools_dir(client: WireClient) -> None:
    result = await client.execute("hello", {})
    assert result["output"] == "hi"


@module_loop
async def test_hot_reload_add_change_remove(tmp_path: Path) -> None:
    """New or changed tool code loads once the person says yes (it runs when it loads)."""
    root = make_project(tmp_path)
    folder = root / ".opencode" / "tools"  # does not exist yet
    options = {"trusted": True, "editor": {"permissionAsk": True}}
    async with connect(root, options=options) as client:
        changes: list[Any] = []

        @client.feature("tools/listChanged")
        def changed(ls: WireClient, params: Any) -> None:
            changes.append(params)

        async def until(condition: Any) -> None:
            async with asyncio.timeout(5):
                while not await condition():
                    await asyncio.sleep(0.05)

        async def output() -> str:
            return str((await client.execute("fresh", {}))["output"])

        assert "fresh" not in await client.tool_ids()
        write(folder / "fresh.py", tool_source("A fresh tool", "first"))
        await until(lambda: _true(len(changes) >= 1))
        (ask,) = client.asks
        assert ask["permission"] == "config" and ask["patterns"] == [".opencode/tools/fresh.py"]
        assert "runs their code" in ask["title"] and ask["always"] == []
        assert "fresh" in await client.tool_ids()
        assert await output() == "first"

        def config_asks() -> int:
            return sum(ask["permission"] == "config" for ask in client.asks)

        seen = len(changes)
        write(folder / "fresh.py", tool_source("A fresh tool", "second"))
        await until(lambda: _true(config_asks() == 2 and len(changes) > seen))
        await until(lambda: _in("fresh", client.tool_ids()))
        assert await output() == "second"

        (folder / "fresh.py").unlink()  # a removal applies at once, no one asked
        await until(lambda: _not_in("fresh", client.tool_ids()))
        gone = await client.execute("fresh", {})
        assert gone["metadata"]["error"] == "unknown_tool"
        assert config_asks() == 2

        # A file that does not load is reported once; the other tools stay.
        before = await client.tool_ids()
        write(folder / "bad.py", BROKEN)
        await until(lambda: _true(len(client.messages) == 1))
        [shown] = client.messages
        assert "bad.py" in shown.message and "line 3" in shown.message
        assert await client.tool_ids() == before


async def _true(value: bool) -> bool:
    return value


async def _in(item: str, values: Any) -> bool:
    return item in await values


async def _not_in(item: str, values: Any) -> bool:
    return item not in await values


def test_toolhost_list_shows_custom_tools_overrides_and_problems(root: Path) -> None:
    read = write(root / ".opencode" / "tools" / "read.py", tool_source("My own reader", "mine"))
    try:
        done = run_toolhost("list", "--trusted", cwd=root)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        [read_line] = [line for line in lines if line.startswith("read ")]
        assert "My own reader" in read_line
        assert "(custom, replaces built-in read)" in read_line
        [greet_line] = [line for line in lines if line.startswith("greet ")]
        assert greet_line.endswith("(custom)")
        [problem] = [line for line in lines if line.startswith("custom tool not loaded:")]
        assert "broken.py" in problem

        done = run_toolhost("list", "--trusted", "--json", cwd=root)
        listing = json.loads(done.stdout)
        assert listing["overridden"] == ["read"]
        assert [p["file"] for p in listing["problems"]] == [
            str(root / ".opencode" / "tools" / "broken.py")
        ]
        assert listing["problems"][0]["kind"] == "custom"
        assert "hello" in [tool["id"] for tool in listing["tools"]]  # the global dir

        done = run_toolhost("run", "--trusted", "greet", '{"name": "世界"}', cwd=root)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "你好，世界！"
        assert "broken.py" in done.stderr  # a warning, not the output
        done = run_toolhost("run", "--trusted", "read", '{"filePath": "notes.txt"}', cwd=root)
        assert done.stdout.strip() == "mine"
    finally:
        read.unlink()
