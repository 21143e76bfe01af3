"""The toolhost console script: list, run, and serve over TCP."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
from pathlib import Path

import pytest
from lsprotocol import types

import server
from server.cli import is_loopback, parse_address
from tests.wire.conftest import WireClient, listening, make_project, run_toolhost


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_version_matches_the_distribution() -> None:
    assert server.__version__ == importlib.metadata.version("toolhost-sidecar")


def test_list_plain(root: Path) -> None:
    done = run_toolhost("list", cwd=root)
    assert done.returncode == 0, done.stderr
    ids = [line.split()[0] for line in done.stdout.splitlines()]
    assert ids[:2] == ["bash", "read"]
    assert {"edit", "write", "grep"} <= set(ids)
    assert "invalid" not in ids
    read_line = next(line for line in done.stdout.splitlines() if line.startswith("read "))
    assert "\n" not in read_line and len(read_line.split(maxsplit=1)[1]) > 10


def test_list_json_is_the_tools_list_result(root: Path) -> None:
    done = run_toolhost(
        "list", "--json", "--model", "openai/gpt-5", "--cwd", str(root), cwd=root.parent
    )
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["tools"]
    ids = [tool["id"] for tool in tools]
    assert "edit" not in ids and "read" in ids
    assert all(tool["parameters"]["type"] == "object" for tool in tools)


def test_list_rejects_a_model_without_provider(root: Path) -> None:
    done = run_toolhost("list", "--model", "gpt-5", cwd=root)
    assert done.returncode == 2
    assert "PROVIDER/MODEL" in done.stderr


def test_run_prints_the_output(root: Path) -> None:
    done = run_toolhost("run", "read", '{"filePath": "notes.txt"}', cwd=root)
    assert done.returncode == 0, done.stderr
    assert "2: beta" in done.stdout


def test_run_json_prints_the_tool_result_and_exits_1_on_error(root: Path) -> None:
    done = run_toolhost("run", "read", '{"filePath": "missing.txt"}', "--json", cwd=root)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert result["metadata"]["error"] == "not_found"
    assert set(result) == {"title", "output", "metadata", "attachments", "isError"}


@pytest.mark.parametrize(
    ("args", "message"),
    [("{filePath: x}", "not valid JSON"), ('["notes.txt"]', "must be a JSON object")],
)
def test_run_bad_arguments_exit_2(root: Path, args: str, message: str) -> None:
    done = run_toolhost("run", "read", args, cwd=root)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_run_rejects_an_ask_unless_yes(root: Path) -> None:
    done = run_toolhost("run", "read", '{"filePath": ".env"}', cwd=root)
    assert done.returncode == 1
    assert "toolhost run --yes" in done.stderr
    assert "opencode.json" in done.stderr
    assert "secret" not in done.stdout + done.stderr

    done = run_toolhost("run", "read", '{"filePath": ".env"}', "--yes", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "TOKEN=secret" in done.stdout


def test_run_with_cwd(root: Path) -> None:
    done = run_toolhost(
        "run", "glob", '{"pattern": "**/*.py"}', "--cwd", str(root), cwd=root.parent
    )
    assert done.returncode == 0, done.stderr
    assert str(root / "src/pkg/core.py") in done.stdout


@pytest.mark.parametrize(
    ("value", "address"),
    [
        ("8123", ("127.0.0.1", 8123)),
        (":8123", ("127.0.0.1", 8123)),
        ("localhost:8123", ("localhost", 8123)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("[::1]:8123", ("::1", 8123)),
    ],
)
def test_parse_address(value: str, address: tuple[str, int]) -> None:
    assert parse_address(value) == address


def test_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")


def test_serve_rejects_a_bad_address(root: Path) -> None:
    done = run_toolhost("serve", "--tcp", "127.0.0.1:port", cwd=root)
    assert done.returncode == 2
    assert "HOST:PORT" in done.stderr


async def test_serve_over_tcp(root: Path, tmp_path: Path) -> None:
    async with listening("--tcp", root, tmp_path / "data") as (proc, port):
        client = WireClient()
        await client.start_tcp("127.0.0.1", port)
        await client.initialize_session(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
        )
        result = await client.execute("read", {"filePath": "notes.txt"})
        assert "alpha" in result["output"]
        await client.shutdown_session()  # shutdown, then exit
        assert await asyncio.wait_for(proc.wait(), 20) == 0
        await client.stop()
