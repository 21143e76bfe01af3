"""OpenCode's own JS/TS custom tools, run unchanged through the host on Node.js, the
fallback when Bun cannot be had (``TOOLHOST_JS_RUNTIME=node`` here; Bun's own tests are
in test_custom_tools_bun.py).

The npm packages are installed once per test run: ``@opencode-ai/plugin`` and ``zod``
into the project's ``.opencode/`` (as OpenCode does), esbuild into toolhost's cache.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor
from tests.custom_tool_helpers import custom_ids, write
from tools import ToolHost, config_from_opencode
from tools.custom import node_host, node_runtime

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="Node.js and npm are not on PATH, so JS/TS custom tools cannot run here",
)

GREET_TS = """
    import { tool } from "@opencode-ai/plugin"

    export default tool({
      description: "返回问候语",
      args: {
        name: tool.schema.string().describe("用户名字"),
      },
      async execute(args, context) {
        return { title: "问候", output: `你好，${args.name}！`, metadata: { timestamp: Date.now() } }
      },
    })
"""  # noqa: E501 - exactly as OpenCode's docs show it

# The older shape: a zod object under ``parameters``, and a plain string result.
OLD_SHAPE_TS = """
    import { z } from "zod"

    interface Args { path: string; count?: number }

    export default {
      description: "Repeat a path",
      parameters: z.object({
        path: z.string().describe("The path to repeat"),
        count: z.number().int().min(1).default(2).describe("How many times"),
      }),
      async execute(args: Args): Promise<string> {
        return Array(args.count).fill(args.path).join(" ")
      },
    }
"""

MATH_JS = """
    import { tool } from "@opencode-ai/plugin"

    const numbers = {
      a: tool.schema.number().describe("The first number"),
      b: tool.schema.number().describe("The second number"),
    }
    export const add = tool({
      description: "Add", args: numbers, execute: async (x) => String(x.a + x.b),
    })
    export const multiply = tool({
      description: "Multiply", args: numbers, execute: async (x) => String(x.a * x.b),
    })
    export const VERSION = "1.0"
"""


def npm_install(folder: Path, *packages: str) -> None:
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"npm install failed (no registry access?): {done.stderr.strip()[-300:]}")


@pytest.fixture(scope="module")
def node_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose .opencode/ has the packages OpenCode would have installed."""
    root = tmp_path_factory.mktemp("node-project")
    opencode = root / ".opencode"
    opencode.mkdir()
    (opencode / "package.json").write_text('{"dependencies": {}}\n', encoding="utf-8")
    npm_install(opencode, "@opencode-ai/plugin", "zod")
    return root


@pytest.fixture(scope="module")
def node_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("toolhost-data-node")


@pytest.fixture(autouse=True)
def _env(node_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One npm cache for the module, so esbuild is installed once.
    monkeypatch.setenv("TOOLHOST_DATA_DIR", str(node_cache))
    monkeypatch.setenv("TOOLHOST_JS_RUNTIME", "node")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)


@pytest.fixture
def ts_tools(node_project: Path) -> Path:
    folder = node_project / ".opencode" / "tools"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    return folder


@pytest.fixture
def make_host(node_project: Path) -> Iterator[Any]:
    hosts: list[ToolHost] = []

    def make(worktree: Path = node_project) -> ToolHost:
        host = ToolHost(worktree, load_custom=True)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


async def test_greet_ts_as_documented(make_host, ts_tools: Path) -> None:
    write(ts_tools / "greet.ts", GREET_TS)
    host = make_host()
    assert host.custom_problems == []
    greet = host.registry.get("greet")
    assert greet.description == "返回问候语"
    assert greet.schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "用户名字"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    before = time.time() * 1000
    result = await host.execute("greet", {"name": "小明"})
    assert not result.is_error, result.output
    assert (result.output, result.title) == ("你好，小明！", "问候")
    assert before <= result.metadata["timestamp"] <= time.time() * 1000


async def test_older_parameters_shape_and_string_result(make_host, ts_tools: Path) -> None:
    write(ts_tools / "repeat.ts", OLD_SHAPE_TS)
    host = make_host()
    schema = host.registry.get("repeat").schema
    text = json.dumps(schema)
    assert "$schema" not in text and "$ref" not in text and '"title"' not in text
    assert schema["required"] == ["path"]
    assert schema["properties"]["count"]["description"] == "How many times"
    assert schema["properties"]["count"]["default"] == 2
    result = await host.execute("repeat", {"path": "a.txt"})
    assert (result.output, result.title) == ("a.txt a.txt", "")


async def test_js_exports_are_named_by_the_file(make_host, ts_tools: Path) -> None:
    write(ts_tools / "math.js", MATH_JS)
    host = make_host()
    assert custom_ids(host) == ["math_add", "math_multiply"]
    assert (await host.execute("math_multiply", {"a": 6, "b": 7})).output == "42"
    bad = await host.execute("math_add", {"a": "six", "b": 1})
    assert bad.is_error and bad.metadata["error"] == "invalid_arguments"
    assert "The math_add tool was called with invalid arguments:\n- a: " in bad.output


async def test_ask_and_metadata_are_proxied(make_host, ts_tools: Path) -> None:
    write(
        ts_tools / "deploy.ts",
        """
        import { tool } from "@opencode-ai/plugin"

        export default tool({
          description: "Deploy",
          args: { target: tool.schema.string().describe("Where to deploy") },
          async execute(args, context) {
            context.metadata({ title: "asking", metadata: { target: args.target } })
            await context.ask({
              permission: "deploy", patterns: [args.target], always: ["*"], metadata: {},
            })
            return `deployed to ${args.target} by ${context.agent} in ${context.directory}`
          },
        })
        """,
    )
    host = make_host()
    host.set_config(config_from_opencode({"permission": {"deploy": "ask"}}))
    rejecting = RecordingEditor(reply="reject")
    result = await host.execute("deploy", {"target": "prod"}, editor=rejecting)
    assert result.is_error and result.metadata["error"] == "permission_rejected"
    assert [(a.permission, a.patterns, a.always) for a in rejecting.asks] == [
        ("deploy", ["prod"], ["*"])
    ]
    assert rejecting.updates[0]["title"] == "asking"
    assert rejecting.updates[0]["metadata"] == {"target": "prod"}
    allowing = RecordingEditor(reply="once")
    result = await host.execute("deploy", {"target": "prod"}, editor=allowing, agent="plan")
    assert result.output == f"deployed to prod by plan in {host.directory}"


async def test_bun_only_apis_fail_the_call_clearly(make_host, ts_tools: Path) -> None:
    write(
        ts_tools / "bunny.ts",
        """
        import { tool } from "@opencode-ai/plugin"
        import { $ } from "bun"

        export const global_ = tool({
          description: "Uses the Bun global",
          args: {},
          async execute() { return await Bun.$`ls`.text() },
        })
        export const imported = tool({
          description: "Uses bun's $",
          args: {},
          async execute() { return await $`ls`.text() },
        })
        """,
    )
    host = make_host()
    assert custom_ids(host) == ["bunny_global_", "bunny_imported"]
    for tool_id in custom_ids(host):
        result = await host.execute(tool_id, {})
        assert result.is_error and result.metadata["error"] == "failed"
        assert result.output.startswith(f"The {tool_id} tool cannot run here. This tool uses Bun")
        assert "Bun-only API" in result.output and "Node.js" in result.output


async def test_failures_are_results_and_broken_files_are_reported(
    make_host, ts_tools: Path
) -> None:
    write(ts_tools / "greet.ts", GREET_TS)
    write(ts_tools / "syntax.ts", "export default {\n")
    write(ts_tools / "throws_at_load.ts", 'throw new Error("no config")\n')
    write(ts_tools / "missing.ts", 'import x from "not-a-real-package-xyz"\nexport default x\n')
    write(
        ts_tools / "fields.ts",
        """
        import { tool } from "@opencode-ai/plugin"
        export const noExecute = { description: "d", args: {} }
        export const notZod = tool({
          description: "d", args: { n: 3 } as any, execute: async () => "",
        })
        export const fine = tool({ description: "fine", args: {}, execute: async () => "ok" })
        """,
    )
    write(
        ts_tools / "bad.ts",
        """
        import { tool } from "@opencode-ai/plugin"
        export const boom = tool({
          description: "d", args: {}, async execute() { throw new TypeError("nope") },
        })
        export const shape = tool({
          description: "d", args: {}, async execute() { return 42 as any },
        })
        export const nothing = tool({
          description: "d", args: {}, async execute() { return undefined as any },
        })
        """,
    )
    host = make_host()
    assert custom_ids(host) == ["bad_boom", "bad_nothing", "bad_shape", "fields_fine", "greet"]
    problems = [(Path(p.file).name, p.reason) for p in host.custom_problems]
    reasons = dict(problems)
    assert {name for name, _ in problems} == {
        "syntax.ts",
        "throws_at_load.ts",
        "missing.ts",
        "fields.ts",
    }
    assert "Transform failed" in reasons["syntax.ts"] or "Unexpected" in reasons["syntax.ts"]
    assert reasons["throws_at_load.ts"] == "Error: no config"
    assert "not-a-real-package-xyz" in reasons["missing.ts"]
    field_reasons = sorted(r for name, r in problems if name == "fields.ts")
    assert field_reasons == [
        "tool 'fields_noExecute': execute is missing: it must be a function",
        "tool 'fields_notZod': args.n is not a zod schema (use tool.schema.string() and friends)",
    ]
    boom = await host.execute("bad_boom", {})
    assert boom.is_error and boom.metadata["error"] == "internal"
    assert "(TypeError: nope)" in boom.output
    shape = await host.execute("bad_shape", {})
    assert shape.is_error and "The bad_shape tool returned an int" in shape.output
    nothing = await host.execute("bad_nothing", {})
    assert nothing.is_error and "returned nothing (undefined)" in nothing.output
    assert (await host.execute("greet", {"name": "x"})).output == "你好，x！"


HANGING_TS = """
    import { tool } from "@opencode-ai/plugin"

    export const polite = tool({
      description: "Stops on abort",
      args: {},
      execute: (_args, context) => new Promise((resolve, reject) => {
        context.abort.addEventListener("abort", () => reject(new Error("aborted")))
      }),
    })
    export const stuck = tool({
      description: "Ignores abort and blocks the event loop",
      args: {},
      async execute() {
        const end = Date.now() + 60_000
        while (Date.now() < end) {}
        return "never"
      },
    })
    export const quick = tool({ description: "Quick", args: {}, execute: async () => "quick" })
"""


async def test_abort_stops_a_polite_tool_and_kills_a_stuck_one(
    make_host, ts_tools: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_host, "ABORT_GRACE_SECONDS", 0.5)
    write(ts_tools / "hang.ts", HANGING_TS)
    host = make_host()
    for tool_id, most in (("hang_polite", 0.4), ("hang_stuck", 1.5)):
        call = asyncio.create_task(host.execute(tool_id, {}))
        await asyncio.sleep(0.3)
        assert not call.done()
        started = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert time.monotonic() - started < most, tool_id
    # The stuck process was killed; the next call starts a fresh one.
    assert (await host.execute("hang_quick", {})).output == "quick"


async def test_hot_reload_of_a_ts_file(make_host, ts_tools: Path) -> None:
    write(ts_tools / "greet.ts", GREET_TS)
    host = make_host()
    assert (await host.execute("greet", {"name": "A"})).output == "你好，A！"
    write(ts_tools / "greet.ts", GREET_TS.replace("你好", "您好"))
    write(ts_tools / "math.js", MATH_JS)
    assert host.reload_custom() is True
    assert (await host.execute("greet", {"name": "A"})).output == "您好，A！"
    assert custom_ids(host) == ["greet", "math_add", "math_multiply"]
    (ts_tools / "greet.ts").unlink()
    assert host.reload_custom() is True
    assert custom_ids(host) == ["math_add", "math_multiply"]
    assert host.reload_custom() is False


async def test_without_node_modules_the_cache_supplies_the_packages(
    make_host, tmp_path: Path
) -> None:
    project = tmp_path / "bare-project"
    write(project / ".opencode" / "tools" / "greet.ts", GREET_TS)
    host = make_host(project)
    assert host.custom_problems == []
    assert node_runtime.cache_ready()
    assert (await host.execute("greet", {"name": "B"})).output == "你好，B！"


async def test_call_overhead_ts_vs_python(make_host, ts_tools: Path) -> None:
    write(
        ts_tools / "ping_ts.ts",
        """
        import { tool } from "@opencode-ai/plugin"
        export default tool({
          description: "ping",
          args: { n: tool.schema.number().describe("n") },
          execute: async (a) => `pong ${a.n}`,
        })
        """,
    )
    write(
        ts_tools / "ping_py.py",
        """
        from pydantic import Field
        from tools import tool

        async def pong(args, ctx):
            return f"pong {args.n:g}"

        ARGS = {"n": (float, Field(description="n"))}
        default = tool(description="ping", args=ARGS, execute=pong)
        sync = tool(description="ping", args=ARGS, execute=lambda a, c: f"pong {a.n:g}")
        """,
    )
    host = make_host()
    timings: dict[str, float] = {}
    for tool_id in ("ping_ts", "ping_py", "ping_py_sync"):
        await host.execute(tool_id, {"n": 0})  # warm up (the Node process, imports)
        rounds = 200
        started = time.perf_counter()
        for n in range(rounds):
            assert (await host.execute(tool_id, {"n": n})).output == f"pong {n}"
        timings[tool_id] = (time.perf_counter() - started) / rounds * 1000
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    print(
        f"\ncall overhead (mean of 200, node {node}): "
        f"TS {timings['ping_ts']:.2f} ms, Python async {timings['ping_py']:.2f} ms, "
        f"Python sync (worker thread) {timings['ping_py_sync']:.2f} ms"
    )
    assert timings["ping_ts"] < 50


async def test_zod_3_tools_work_too(make_host, tmp_path: Path) -> None:
    project = tmp_path / "zod3-project"
    opencode = project / ".opencode"
    opencode.mkdir(parents=True)
    (opencode / "package.json").write_text("{}\n", encoding="utf-8")
    npm_install(opencode, "zod@3.23")
    write(
        opencode / "tools" / "find.ts",
        """
        import { z } from "zod"

        export default {
          description: "Find things",
          parameters: z.object({
            query: z.string().describe("What to look for"),
            mode: z.enum(["fast", "slow"]).default("fast").describe("How hard to look"),
          }),
          async execute(args: { query: string; mode: string }) {
            return `${args.mode}:${args.query}`
          },
        }
        export const raw = {
          description: "Raw shape",
          args: { n: z.number().describe("A number") },
          async execute(args: { n: number }) { return String(args.n + 1) },
        }
        """,
    )
    host = make_host(project)
    assert host.custom_problems == []
    assert host.registry.get("find").schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "mode": {
                "type": "string",
                "enum": ["fast", "slow"],
                "default": "fast",
                "description": "How hard to look",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert (await host.execute("find", {"query": "x"})).output == "fast:x"
    assert (await host.execute("find_raw", {"n": 1})).output == "2"
    bad = await host.execute("find", {"query": 1})
    assert bad.metadata["error"] == "invalid_arguments" and "- query: " in bad.output
