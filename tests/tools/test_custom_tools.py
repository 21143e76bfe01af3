"""Custom Python tools: discovery, naming, schemas, running, failures, hot reload, plugins."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor
from tests.custom_tool_helpers import GREET, custom_ids, problems_of, write
from tools import ToolHost, config_from_opencode, tool
from tools.arguments.schema import normalise_json_schema
from tools.custom import ToolDefinitionError, load_all, plugins, python_loader

MATH = """
    from pydantic import Field
    from tools import tool

    def _add(args, ctx):
        return str(args.a + args.b)

    async def _multiply(args, ctx):
        return str(args.a * args.b)

    NUMBERS = {
        "a": (int, Field(description="The first number")),
        "b": (int, Field(description="The second number")),
    }
    add = tool(description="Add two numbers", args=NUMBERS, execute=_add)
    multiply = tool(description="Multiply two numbers", args=NUMBERS, execute=_multiply)
"""


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No tools from the developer's own ~/.config/opencode."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)


@pytest.fixture
def tools_dir(worktree: Path) -> Path:
    return worktree / ".opencode" / "tools"


@pytest.fixture
def make_host(worktree: Path) -> Iterator[Any]:
    hosts: list[ToolHost] = []

    def make(directory: Path | None = None) -> ToolHost:
        host = ToolHost(worktree, directory=directory, load_custom=True)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


def assert_clean_schema(schema: dict[str, Any]) -> None:
    """Self-contained and described: what every provider accepts."""
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    assert schema["type"] == "object"
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{name} has no description"


# -- the documented examples -----------------------------------------------------------


async def test_greet_example_works_as_documented(make_host, tools_dir: Path, editor) -> None:
    write(tools_dir / "greet.py", GREET)
    host = make_host()
    assert host.custom_problems == []
    greet = host.registry.get("greet")
    assert greet is not None and greet.description == "返回问候语"
    assert greet.schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "用户名字"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    before = time.time()
    result = await host.execute("greet", {"name": "小明"}, editor=editor)
    assert not result.is_error
    assert result.output == "你好，小明！"
    assert result.title == "问候"
    assert before <= result.metadata["timestamp"] <= time.time()


async def test_other_names_become_stem_underscore_name(make_host, tools_dir: Path) -> None:
    write(tools_dir / "math.py", MATH)
    host = make_host()
    assert custom_ids(host) == ["math_add", "math_multiply"]
    for tool_id in ("math_add", "math_multiply"):
        assert_clean_schema(host.registry.get(tool_id).schema)
    assert (await host.execute("math_add", {"a": 2, "b": 3})).output == "5"  # sync execute
    assert (await host.execute("math_multiply", {"a": 2, "b": 3})).output == "6"  # async


async def test_custom_tools_come_after_builtins_sorted(make_host, tools_dir: Path) -> None:
    write(tools_dir / "zeta.py", GREET)
    write(tools_dir / "alpha.py", GREET)
    host = make_host()
    ids = [t.id for t in host.offered()]
    assert ids[-2:] == ["alpha", "zeta"]
    assert "read" in ids[:-2] and set(ids[:-2]) <= {t.id for t in host.registry.builtins}


def test_helper_script_is_skipped_without_running_it(make_host, tools_dir: Path) -> None:
    marker = tools_dir / "ran.txt"
    write(
        tools_dir / "script.py",
        f"""
        import sys
        from pathlib import Path
        Path({str(marker)!r}).write_text("ran")
        print(int(sys.argv[1]) + int(sys.argv[2]))
        """,
    )
    write(tools_dir / "greet.py", GREET)
    host = make_host()
    assert custom_ids(host) == ["greet"]
    assert host.custom_problems == []
    assert not marker.exists()


def test_module_importing_tools_but_defining_none_is_quiet(make_host, tools_dir: Path) -> None:
    write(tools_dir / "shared.py", "from tools import ToolError\nLIMIT = 3\n")
    host = make_host()
    assert custom_ids(host) == [] and host.custom_problems == []


def test_private_names_are_not_tools(make_host, tools_dir: Path) -> None:
    write(
        tools_dir / "box.py",
        """
        from tools import tool
        _hidden = tool(description="not offered", execute=lambda args, ctx: "")
        shown = tool(description="offered", execute=lambda args, ctx: "")
        """,
    )
    assert custom_ids(make_host()) == ["box_shown"]


async def test_sibling_helper_via_relative_import_and_no_bytecode(
    make_host, tools_dir: Path
) -> None:
    write(tools_dir / "helper.py", "def shout(text):\n    return text.upper() + '!'\n")
    write(
        tools_dir / "loud.py",
        """
        from pydantic import Field
        from tools import tool
        from .helper import shout

        default = tool(
            description="Shout",
            args={"text": (str, Field(description="What to shout"))},
            execute=lambda args, ctx: shout(args.text),
        )
        """,
    )
    host = make_host()
    assert (await host.execute("loud", {"text": "hi"})).output == "HI!"
    assert not (tools_dir / "__pycache__").exists()
    assert str(tools_dir) not in sys.path


# -- broken files ----------------------------------------------------------------------


def test_broken_files_are_reported_and_the_rest_still_load(make_host, tools_dir: Path) -> None:
    write(tools_dir / "greet.py", GREET)
    write(tools_dir / "syntax.py", "from tools import tool\ndefault = tool(\n")
    write(tools_dir / "missing_dep.py", "from tools import tool\nimport no_such_package_xyz\n")
    write(
        tools_dir / "bad_args.py",
        'from tools import tool\ndefault = tool(description="d", args=42, execute=print)\n',
    )
    write(tools_dir / "no_execute.py", 'from tools import tool\ndefault = tool(description="d")\n')
    write(
        tools_dir / "bad_schema.py",
        "from tools import tool\nclass Opaque: pass\n"
        'default = tool(description="d", args={"x": Opaque}, execute=print)\n',
    )
    write(tools_dir / "my tool.py", GREET)
    host = make_host()
    assert custom_ids(host) == ["greet"]
    problems = problems_of(host)
    assert set(problems) == {
        "syntax.py",
        "missing_dep.py",
        "bad_args.py",
        "no_execute.py",
        "bad_schema.py",
        "my tool.py",
    }
    assert problems["syntax.py"].startswith("syntax error at line 2")
    assert problems["missing_dep.py"] == (
        "ModuleNotFoundError: No module named 'no_such_package_xyz' (line 2)"
    )
    assert "args must be a pydantic model class" in problems["bad_args.py"]
    assert "42" in problems["bad_args.py"] and "(line 2)" in problems["bad_args.py"]
    assert "execute is required" in problems["no_execute.py"]
    assert "PydanticSchemaGenerationError" in problems["bad_schema.py"]
    assert problems["my tool.py"].startswith("the tool name 'my tool' is not usable")
    # The built-ins are untouched.
    assert host.registry.get("read") is not None


def test_a_file_that_exits_at_import_is_a_problem_not_an_exit(make_host, tools_dir: Path) -> None:
    write(tools_dir / "quits.py", "import sys\nfrom tools import tool\nsys.exit(3)\n")
    host = make_host()
    assert problems_of(host) == {"quits.py": "SystemExit: 3 (line 3)"}


def test_same_id_twice_in_one_layer_is_reported(make_host, worktree: Path) -> None:
    write(worktree / ".opencode" / "tool" / "greet.py", GREET)
    write(worktree / ".opencode" / "tools" / "greet.py", GREET)
    host = make_host()
    assert custom_ids(host) == ["greet"]
    [problem] = host.custom_problems
    assert problem.file == str(worktree / ".opencode" / "tool" / "greet.py")
    assert "also defined by" in problem.reason and "/tools/greet.py" in problem.reason


def test_js_and_ts_files_without_node_are_listed_with_the_reason(
    make_host, tools_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    write(tools_dir / "greet.ts", "export default {}\n")
    write(tools_dir / "other.js", "export default {}\n")
    write(tools_dir / "py.py", GREET)
    host = make_host()
    assert custom_ids(host) == ["py"]
    problems = problems_of(host)
    assert set(problems) == {"greet.ts", "other.js"}
    assert problems["greet.ts"] == (
        "not loaded: JS/TS tools run on Bun, else Node.js 20.6+; Bun could not be had (npm "
        "was not found on PATH to install Bun), and no Node.js (20.6 or newer) was found on PATH"
    )


# -- where tools come from ---------------------------------------------------------------


def test_global_dir_via_xdg_config_home(
    make_host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "elsewhere"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    write(xdg / "opencode" / "tools" / "greet.py", GREET)
    write(xdg / "opencode" / "tool" / "math.py", MATH)
    host = make_host()
    assert custom_ids(host) == ["greet", "math_add", "math_multiply"]


def test_opencode_config_dir_wins_over_xdg(
    make_host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = tmp_path / "explicit"
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(explicit))
    write(tmp_path / "xdg" / "opencode" / "tools" / "ignored.py", GREET)
    write(explicit / "tools" / "greet.py", GREET)
    assert custom_ids(make_host()) == ["greet"]


def test_opencode_config_dir_may_be_the_projects_own_folder(
    make_host, worktree: Path, tools_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(worktree / ".opencode"))
    write(tools_dir / "greet.py", GREET)
    host = make_host()
    assert custom_ids(host) == ["greet"] and host.custom_problems == []


async def test_ancestor_dirs_and_the_nearest_wins(
    make_host, worktree: Path, tmp_path: Path
) -> None:
    deeper = worktree / "pkg" / "app"
    deeper.mkdir(parents=True)
    echo = """
        from tools import tool
        default = tool(description="{where}", execute=lambda args, ctx: "{where}")
    """
    write(worktree / ".opencode" / "tools" / "echo.py", echo.format(where="root"))
    write(worktree / ".opencode" / "tools" / "root_only.py", echo.format(where="root"))
    write(deeper / ".opencode" / "tool" / "echo.py", echo.format(where="app"))
    write(tmp_path / "xdg" / "opencode" / "tools" / "echo.py", echo.format(where="global"))
    write(tmp_path / ".opencode" / "tools" / "outside.py", echo.format(where="outside"))
    host = make_host(directory=deeper)
    assert custom_ids(host) == ["echo", "root_only"]
    assert host.custom_problems == []
    assert (await host.execute("echo", {})).output == "app"
    assert host.custom_watch_dirs()[-1] == deeper / ".opencode" / "tools"


async def test_a_custom_tool_replaces_a_builtin(make_host, tools_dir: Path) -> None:
    write(
        tools_dir / "read.py",
        """
        from tools import tool
        default = tool(description="My own read", execute=lambda args, ctx: "custom read")
        """,
    )
    host = make_host()
    assert host.registry.overridden == frozenset({"read"})
    ids = [t.id for t in host.offered()]
    assert ids.count("read") == 1 and ids[-1] == "read"
    assert (await host.execute("read", {})).output == "custom read"


def test_construction_loads_nothing_until_asked(worktree: Path, tools_dir: Path) -> None:
    write(tools_dir / "greet.py", GREET)
    host = ToolHost(worktree)
    assert host.registry.get("greet") is None
    assert host.reload_custom() is True
    assert host.registry.get("greet") is not None


# -- hot reload ------------------------------------------------------------------------------


async def test_hot_reload_add_change_remove(make_host, tools_dir: Path) -> None:
    host = make_host()
    assert host.reload_custom() is False
    write(tools_dir / "greet.py", GREET)
    assert host.reload_custom() is True
    assert custom_ids(host) == ["greet"]
    assert host.reload_custom() is False
    # Same size, same second: the content decides.
    write(tools_dir / "greet.py", GREET.replace("你好", "您好"))
    assert host.reload_custom() is True
    assert (await host.execute("greet", {"name": "A"})).output == "您好，A！"
    write(tools_dir / "math.py", MATH)
    (tools_dir / "greet.py").unlink()
    assert host.reload_custom() is True
    assert custom_ids(host) == ["math_add", "math_multiply"]
    assert host.registry.get("greet") is None


async def test_a_changed_helper_reloads_its_folder(make_host, tools_dir: Path) -> None:
    write(tools_dir / "helper.py", "WORD = 'one'\n")
    write(
        tools_dir / "word.py",
        """
        from tools import tool
        from . import helper
        default = tool(description="The word", execute=lambda args, ctx: helper.WORD)
        """,
    )
    host = make_host()
    assert (await host.execute("word", {})).output == "one"
    write(tools_dir / "helper.py", "WORD = 'two'\n")
    assert host.reload_custom() is True
    assert (await host.execute("word", {})).output == "two"


def test_fixing_a_broken_file_clears_its_problem(make_host, tools_dir: Path) -> None:
    write(tools_dir / "greet.py", "from tools import tool\ndefault = tool(\n")
    host = make_host()
    assert set(problems_of(host)) == {"greet.py"}
    write(tools_dir / "greet.py", GREET)
    assert host.reload_custom() is True
    assert host.custom_problems == [] and custom_ids(host) == ["greet"]


# -- running ---------------------------------------------------------------------------------

CONTEXT_TOOL = """
    import json
    from tools import tool

    def sync_run(args, ctx):
        ctx.metadata(title="working", metadata={"step": 1})
        return json.dumps({
            "sessionID": ctx.sessionID, "messageID": ctx.messageID, "agent": ctx.agent,
            "directory": ctx.directory, "worktree": ctx.worktree, "aborted": ctx.abort.aborted,
        })

    async def async_run(args, ctx):
        ctx.metadata({"title": "async", "metadata": {"step": 2}})
        return {"output": "ok", "title": "done"}

    sync = tool(description="Sync context", execute=sync_run)
    async_ = tool(description="Async context", execute=async_run)
"""


async def test_context_attributes_and_progress(
    make_host, tools_dir: Path, worktree: Path, editor: RecordingEditor
) -> None:
    write(tools_dir / "ctx.py", CONTEXT_TOOL)
    host = make_host()
    result = await host.execute(
        "ctx_sync", {}, editor=editor, session_id="ses_1", message_id="msg_1", agent="plan"
    )
    assert json.loads(result.output) == {
        "sessionID": "ses_1",
        "messageID": "msg_1",
        "agent": "plan",
        "directory": str(worktree),
        "worktree": str(worktree),
        "aborted": False,
    }
    await asyncio.sleep(0.15)  # progress from a worker thread reaches the loop
    result = await host.execute("ctx_async_", {}, editor=editor, session_id="ses_1")
    assert (result.output, result.title) == ("ok", "done")
    titles = [u.get("title") for u in editor.updates]
    assert titles[0] == "working" and editor.updates[0]["metadata"] == {"step": 1}


async def test_ask_from_a_python_tool(make_host, tools_dir: Path) -> None:
    write(
        tools_dir / "deploy.py",
        """
        from tools import tool

        async def run(args, ctx):
            await ctx.ask(permission="deploy", patterns=["prod"], always=["prod"])
            return "deployed"

        default = tool(description="Deploy", execute=run)
        """,
    )
    host = make_host()
    host.set_config(config_from_opencode({"permission": {"deploy": "ask"}}))
    rejecting = RecordingEditor(reply="reject")
    result = await host.execute("deploy", {}, editor=rejecting)
    assert result.is_error and result.metadata["error"] == "permission_rejected"
    assert [(a.permission, a.patterns) for a in rejecting.asks] == [("deploy", ["prod"])]
    assert (await host.execute("deploy", {}, editor=RecordingEditor())).output == "deployed"


async def test_invalid_arguments_name_the_field(make_host, tools_dir: Path) -> None:
    write(tools_dir / "greet.py", GREET)
    result = await make_host().execute("greet", {"name": 5})
    assert result.is_error and result.metadata["error"] == "invalid_arguments"
    assert "- name:" in result.output and "用户名字" in result.output


async def test_a_raising_tool_is_an_internal_error(make_host, tools_dir: Path) -> None:
    write(
        tools_dir / "boom.py",
        """
        from tools import tool

        def run(args, ctx):
            raise RuntimeError("disk on fire")

        async def arun(args, ctx):
            raise KeyError("gone")

        default = tool(description="Boom", execute=run)
        later = tool(description="Boom later", execute=arun)
        """,
    )
    host = make_host()
    for tool_id, shown in (("boom", "RuntimeError: disk on fire"), ("boom_later", "KeyError")):
        result = await host.execute(tool_id, {})
        assert result.is_error and result.metadata["error"] == "internal"
        assert shown in result.output and "fault in the tool" in result.output
    assert (await host.execute("boom", {})).is_error  # the host keeps serving


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ("42", "returned an int"),
        ("None", "returned nothing (None)"),
        ('{"title": "t"}', "returned a dict with no output"),
        ('{"output": 3}', 'an "output" that is an int'),
        ('{"output": "x", "metadata": [1]}', '"metadata" that is a list'),
        ('{"output": "x", "attachments": [{"mime": "a"}]}', "attachment that is not valid"),
    ],
)
async def test_wrong_return_shape_is_a_clear_error(
    make_host, tools_dir: Path, returned: str, expected: str
) -> None:
    write(
        tools_dir / "shape.py",
        "from tools import tool\n"
        f'default = tool(description="d", execute=lambda a, c: {returned})\n',
    )
    result = await make_host().execute("shape", {})
    assert result.is_error and result.metadata["error"] == "internal"
    assert result.output.startswith("The shape tool returned")
    assert expected in result.output
    assert 'a tool must return a string, or a dict with "output"' in result.output


async def test_attachments_and_dict_results(make_host, tools_dir: Path) -> None:
    write(
        tools_dir / "pic.py",
        """
        from tools import tool
        default = tool(description="d", execute=lambda a, c: {
            "output": "see picture",
            "attachments": [{"mime": "image/png", "url": "data:image/png;base64,AA=="}],
        })
        """,
    )
    result = await make_host().execute("pic", {})
    assert result.attachments[0].mime == "image/png" and result.title == ""


HANGING = """
    import asyncio, time
    from tools import tool

    async def forever(args, ctx):
        await asyncio.sleep(3600)

    async def stubborn(args, ctx):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass
        await asyncio.sleep(1)  # carries on well past its abort
        return "late"

    def polite(args, ctx):
        while not ctx.abort.aborted:
            time.sleep(0.01)
        return "stopped"

    def blocked(args, ctx):
        time.sleep(3600)

    forever_ = tool(description="Hangs", execute=forever)
    stubborn_ = tool(description="Ignores cancellation", execute=stubborn)
    polite_ = tool(description="Polls abort", execute=polite)
    blocked_ = tool(description="Blocks a thread", execute=blocked)
"""


@pytest.mark.parametrize("name", ["forever_", "stubborn_", "polite_", "blocked_"])
async def test_cancelling_a_hanging_tool(
    make_host, tools_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(python_loader, "ABORT_GRACE_SECONDS", 0.3)
    write(tools_dir / "hang.py", HANGING)
    host = make_host()
    call = asyncio.create_task(host.execute(f"hang_{name}", {}))
    await asyncio.sleep(0.1)
    assert not call.done()
    started = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 1.0
    # The host still serves.
    write(tools_dir / "greet.py", GREET)
    host.reload_custom()
    assert (await host.execute("greet", {"name": "x"})).output == "你好，x！"


# -- the API itself --------------------------------------------------------------------------


def test_tool_accepts_opencodes_one_object_form() -> None:
    spec = tool({"description": "  Hi  ", "execute": lambda a, c: "hi"})
    assert spec.description == "Hi"
    assert spec.parameters.model_json_schema()["properties"] == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"execute": print}, "description is required"),
        ({"description": "d", "execute": 3}, "execute must be a function"),
        ({"description": "d", "execute": print, "args": {"x": (int,)}}, "(type, Field(...)) pair"),
        ({"description": "d", "execute": print, "args": {"1x": int}}, "not a valid field name"),
    ],
)
def test_tool_rejects_bad_definitions(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tool(**kwargs)


def test_load_all_is_a_one_shot(worktree: Path, tools_dir: Path) -> None:
    write(tools_dir / "greet.py", GREET)
    write(tools_dir / "bad.py", "from tools import tool\nx = (\n")
    found, problems = load_all(worktree, worktree)
    assert [t.id for t in found] == ["greet"]
    assert [Path(p.file).name for p in problems] == ["bad.py"]


def test_normalise_json_schema_inlines_and_rejects_recursion() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/Point", "description": "where"}},
        "required": ["p"],
        "$defs": {
            "Point": {"type": "object", "title": "Point", "properties": {"x": {"type": "number"}}}
        },
    }
    assert normalise_json_schema(schema) == {
        "type": "object",
        "properties": {
            "p": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "description": "where",
                "additionalProperties": False,
            }
        },
        "required": ["p"],
        "additionalProperties": False,
    }
    with pytest.raises(ValueError, match="recursive"):
        normalise_json_schema({"type": "object", "properties": {"n": {"$ref": "#"}}})
    looped = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
    }
    with pytest.raises(ValueError, match="recursive"):
        normalise_json_schema(looped)


# -- plugins -----------------------------------------------------------------------------------

PLUGIN_CODE = """
from pydantic import Field
from tools import define, tool


def _shout(args, ctx):
    return args.text.upper()


shout = tool(
    description="Shout some text",
    args={"text": (str, Field(description="The text to shout"))},
    execute=_shout,
)


async def _whisper(args, ctx):
    return "psst"


whisper = define("whisper_tool", execute=_whisper, description="Whisper")
"""

PLUGIN_MODULE = """
from tools import tool

default = tool(description="The suite's main tool", execute=lambda a, c: "main")
extra = tool(description="Another one", execute=lambda a, c: "extra")
"""

ENTRY_POINTS = """[toolhost.tools]
shout = demo_toolhost_plugin:shout
whisper = demo_toolhost_plugin:whisper
suite = demo_toolhost_plugin.suite
broken = demo_toolhost_plugin:missing_name
"""


def build_wheel(where: Path) -> Path:
    """A minimal but valid wheel with entry points, built the way a backend would."""
    name, version = "demo_toolhost_plugin", "1.0"
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": PLUGIN_CODE,
        f"{name}/suite.py": PLUGIN_MODULE,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{dist_info}/entry_points.txt": ENTRY_POINTS,
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist_info}/RECORD,,\n"
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{dist_info}/RECORD", record)
    return wheel


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    wheel = build_wheel(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--disable-pip-version-check", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(site))
    yield site
    for module in [m for m in sys.modules if m.startswith("demo_toolhost_plugin")]:
        del sys.modules[module]


async def test_pip_installed_plugin(make_host, installed_plugin: Path) -> None:
    host = make_host()
    assert custom_ids(host) == ["shout", "suite", "suite_extra", "whisper"]
    for tool_id in ("shout", "suite", "suite_extra", "whisper"):
        assert_clean_schema(host.registry.get(tool_id).schema)
    assert host.registry.get("shout").schema["properties"]["text"]["description"]
    assert (await host.execute("shout", {"text": "hey"})).output == "HEY"
    assert (await host.execute("whisper", {})).output == "psst"
    assert (await host.execute("suite", {})).output == "main"
    [problem] = host.custom_problems
    assert problem.file.startswith("entry point broken = demo_toolhost_plugin:missing_name")
    assert "demo_toolhost_plugin 1.0" in problem.file
    assert "AttributeError" in problem.reason


def test_a_project_file_beats_a_plugin_of_the_same_name(
    make_host, installed_plugin: Path, tools_dir: Path
) -> None:
    write(
        tools_dir / "shout.py",
        'from tools import tool\ndefault = tool(description="local", execute=lambda a, c: "")\n',
    )
    host = make_host()
    assert host.registry.get("shout").description == "local"
    assert not any("also defined" in p.reason for p in host.custom_problems)


def test_without_a_declaring_package_importlib_metadata_is_not_loaded() -> None:
    # This environment has no plugin: the first look costs no importlib.metadata.
    code = (
        "import sys; from tools.custom import plugins; "
        "print(plugins.entry_points(), 'importlib.metadata' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["[]", "False"]


def test_the_group_is_looked_for_in_each_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    other = site / "other-1.0.dist-info"
    other.mkdir(parents=True)
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (site / "legacy-2.0.egg-info").write_text("Metadata-Version: 1.0\n")  # a file: no entry points
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "missing")])
    assert not plugins.declared_on_path(plugins.GROUP)
    declaring = site / "demo-1.0.dist-info"
    declaring.mkdir()
    (declaring / "entry_points.txt").write_text(ENTRY_POINTS)
    assert plugins.declared_on_path(plugins.GROUP)


def test_a_zip_on_the_path_is_left_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = build_wheel(tmp_path)  # a zip whose metadata this does not open
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert plugins.declared_on_path(plugins.GROUP)


def test_a_newly_installed_plugin_is_found_on_reload(
    make_host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host()
    assert "shout" not in custom_ids(host)
    site = tmp_path / "later-site"
    with zipfile.ZipFile(build_wheel(tmp_path)) as archive:
        archive.extractall(site)
    monkeypatch.syspath_prepend(str(site))
    try:
        assert host.reload_custom() is True
        assert "shout" in custom_ids(host)
    finally:
        for module in [m for m in sys.modules if m.startswith("demo_toolhost_plugin")]:
            del sys.modules[module]
