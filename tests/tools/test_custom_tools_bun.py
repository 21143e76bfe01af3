"""OpenCode's JS/TS custom tools on Bun, where OpenCode runs them: ``Bun.$``, ``Bun.file``,
``Bun.write`` and ``ctx.worktree``/``ctx.directory`` work unchanged.

toolhost installs Bun (npm ``bun`` 1.4.x, which ships the binary) into its data dir on
first need; this module lets it do so once, into a data dir of its own, with no ``bun``
on PATH. It skips, saying so, when npm is missing or the registry cannot be reached.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.custom_tool_helpers import custom_ids, problems_of, write
from tools import ToolHost
from tools.custom import node_runtime

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("python3") is None,
    reason="npm (to install Bun and the tool packages) or python3 is not on PATH",
)

# The seed's example: a TypeScript tool that runs a Python script with Bun's shell.
PYTHON_WRAPPER_TS = """
    import { tool } from "@opencode-ai/plugin"
    import path from "path"

    export default tool({
      id: "python-wrapper",
      description: "Run the project's Python script on some input",
      args: {
        input: tool.schema.string().describe("The input for the script"),
      },
      async execute(args, ctx) {
        const script = path.join(ctx.worktree, ".opencode/tools/script.py")
        return await Bun.$`python3 ${script} ${args.input}`.text()
      },
    })
"""

SCRIPT_PY = """
    import sys

    print(f"python got {sys.argv[1]!r}")
"""

FILES_TS = """
    import { tool } from "@opencode-ai/plugin"
    import { $ } from "bun"

    export const roundtrip = tool({
      description: "Write a file with Bun.write, read it back with Bun.file",
      args: { name: tool.schema.string(), text: tool.schema.string() },
      async execute(args, ctx) {
        const target = `${ctx.directory}/${args.name}`
        await Bun.write(target, args.text)
        const back = await Bun.file(target).text()
        return { title: "roundtrip", output: back, metadata: { size: Bun.file(target).size } }
      },
    })

    export const where = tool({
      description: "Where the tool runs",
      args: {},
      async execute(_args, ctx) {
        const pwd = (await $`pwd`.cwd(ctx.worktree).text()).trim()
        return `${typeof Bun.version} ${pwd === ctx.worktree} ${ctx.directory === ctx.worktree}`
      },
    })

    export const noisy = tool({
      description: "Prints to stdout in every way a tool can",
      args: {},
      async execute() {
        console.log("console.log noise")
        process.stdout.write("stdout noise\\n")
        await $`echo shell noise`
        return "still fine"
      },
    })
"""


def _path_without_bun() -> str:
    # No bun of the user's: the one toolhost installs must be found and used.
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(p for p in folders if not (Path(p) / "bun").exists())


@pytest.fixture(scope="module")
def bun_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data dir in which toolhost installs Bun itself, as it does on first need."""
    data = tmp_path_factory.mktemp("toolhost-data-bun")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLHOST_DATA_DIR", str(data))
        patch.setenv("PATH", _path_without_bun())
        patch.delenv("TOOLHOST_BUN", raising=False)
        try:
            node_runtime.ensure_bun()
            node_runtime.ensure_cache()
        except node_runtime.NodeUnavailable as error:
            pytest.skip(f"Bun could not be installed from npm here: {error}")
    yield data


@pytest.fixture(autouse=True)
def _env(bun_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLHOST_DATA_DIR", str(bun_data))
    monkeypatch.setenv("PATH", _path_without_bun())
    monkeypatch.delenv("TOOLHOST_BUN", raising=False)
    monkeypatch.delenv("TOOLHOST_JS_RUNTIME", raising=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)
    root = tmp_path / "project"
    (root / ".opencode" / "tools").mkdir(parents=True)
    return root


@pytest.fixture
def make_host() -> Iterator[Any]:
    hosts: list[ToolHost] = []

    def make(worktree: Path) -> ToolHost:
        host = ToolHost(worktree, load_custom=True)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


def test_bun_is_the_runtime_once_installed(bun_data: Path) -> None:
    runtime = node_runtime.find_runtime(install=False)
    assert runtime.kind == "bun"
    assert runtime.path.startswith(str(bun_data))
    assert runtime.version.startswith("1.")


async def test_the_seed_python_wrapper_runs_unchanged(make_host, project: Path) -> None:
    tools = project / ".opencode" / "tools"
    write(tools / "python-wrapper.ts", PYTHON_WRAPPER_TS)
    write(tools / "script.py", SCRIPT_PY)  # a helper, not a tool: skipped quietly

    host = make_host(project)

    assert problems_of(host) == {}
    # Named after the file, as OpenCode names it; the id field is accepted and ignored.
    assert custom_ids(host) == ["python-wrapper"]
    result = await host.execute("python-wrapper", {"input": "hello world"})
    assert not result.is_error, result.output
    assert result.output == "python got 'hello world'\n"


async def test_bun_file_write_shell_and_context(make_host, project: Path) -> None:
    write(project / ".opencode" / "tools" / "files.ts", FILES_TS)
    host = make_host(project)
    assert custom_ids(host) == ["files_noisy", "files_roundtrip", "files_where"]

    written = await host.execute("files_roundtrip", {"name": "out.txt", "text": "héllo"})
    where = await host.execute("files_where", {})
    noisy = await host.execute("files_noisy", {})

    assert not written.is_error, written.output
    assert written.output == "héllo"
    assert written.metadata["size"] == len("héllo".encode())
    assert (project / "out.txt").read_text() == "héllo"
    assert where.output == "string true true"
    # What a tool prints goes to the log; the protocol pipe is its own.
    assert noisy.output == "still fine"


async def test_without_node_modules_the_cache_supplies_the_packages(
    make_host, project: Path
) -> None:
    write(
        project / ".opencode" / "tools" / "greet.ts",
        """
        import { tool } from "@opencode-ai/plugin"
        export default tool({
          description: "返回问候语",
          args: { name: tool.schema.string().describe("用户名字") },
          async execute(args) { return { title: "问候", output: `你好，${args.name}！` } },
        })
        """,
    )
    host = make_host(project)
    assert host.custom_problems == []
    schema = host.registry.get("greet").schema
    assert schema is not None
    assert schema["properties"]["name"]["description"] == "用户名字"
    result = await host.execute("greet", {"name": "B"})
    assert (result.title, result.output) == ("问候", "你好，B！")


def test_the_doctor_check_names_bun(bun_data: Path) -> None:
    check = node_runtime.doctor_check()
    assert check["name"] == "js-runtime" and check["ok"] is True
    assert check["summary"].startswith("Bun 1.")
    assert "runs JS/TS custom tools, as in OpenCode" in check["detail"]


def test_the_doctor_check_says_when_node_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLHOST_JS_RUNTIME", "node")
    if shutil.which("node") is None:
        pytest.skip("no node on PATH")
    check = node_runtime.doctor_check()
    assert check["ok"] is True and check["summary"].startswith("Node.js ")
    assert "Bun.* APIs fail" in check["detail"]
