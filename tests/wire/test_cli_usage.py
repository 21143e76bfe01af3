"""The ``toolhost`` command line's other paths: bad usage (exit 2), tool errors (exit 1),
and ``serve``'s exit status for each way a stdio session can end."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tests.wire.conftest import make_project, raw_session, run_toolhost

SECONDS = 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_no_command_is_bad_usage(root: Path) -> None:
    done = run_toolhost(cwd=root)
    assert done.returncode == 2
    assert "usage: toolhost" in done.stderr
    assert "{serve,list,run,trust,doctor,mcp,acp,undo,setup}" in done.stderr


def test_an_unknown_command_is_bad_usage(root: Path) -> None:
    done = run_toolhost("start", cwd=root)
    assert done.returncode == 2
    assert "invalid choice: 'start'" in done.stderr


def test_serve_takes_one_transport(root: Path) -> None:
    done = run_toolhost("serve", "--tcp", "127.0.0.1:0", "--ws", "127.0.0.1:0", cwd=root)
    assert done.returncode == 2
    assert "not allowed with argument" in done.stderr


@pytest.mark.parametrize("transport", ["--tcp", "--ws"])
def test_a_port_in_use_says_so_without_a_traceback(root: Path, transport: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_toolhost("serve", transport, f"127.0.0.1:{port}", cwd=root)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [["list"], ["run", "read", '{"filePath": "notes.txt"}']],
    ids=["list", "run"],
)
def test_a_cwd_that_is_not_a_directory_is_bad_usage(root: Path, command: list[str]) -> None:
    for cwd in (root / "missing", root / "notes.txt"):
        done = run_toolhost(*command, "--cwd", str(cwd), cwd=root)
        assert done.returncode == 2
        assert done.stderr == f"toolhost: --cwd {cwd} is not a directory\n"
        assert done.stdout == ""


def test_run_of_an_unknown_tool_exits_1_and_names_the_tools(root: Path) -> None:
    done = run_toolhost("run", "nosuch", "{}", cwd=root)
    assert done.returncode == 1
    assert "unavailable tool 'nosuch'" in done.stderr
    assert "Available tools: bash, read" in done.stderr
    assert done.stdout == ""


def test_run_prints_a_tool_error_on_stderr(root: Path) -> None:
    done = run_toolhost("run", "read", '{"filePath": "missing.txt"}', cwd=root)
    assert done.returncode == 1
    assert "missing.txt" in done.stderr
    assert done.stdout == ""


def test_run_reports_a_broken_config_and_still_runs(root: Path) -> None:
    (root / "opencode.json").write_text('{"permission": {"edit": "sometimes"}}')
    done = run_toolhost("run", "read", '{"filePath": "notes.txt"}', cwd=root)
    assert done.stderr.startswith("toolhost: warning: ")
    assert "opencode.json" in done.stderr
    # Failing closed, every permission asks: nobody to ask at a shell but --yes.
    assert done.returncode == 1 and "no one could be asked" in done.stdout + done.stderr
    done = run_toolhost("run", "read", '{"filePath": "notes.txt"}', "--yes", cwd=root)
    assert "1: alpha" in done.stdout


# --- serve over stdio: the exit status (end of input: tests/wire/test_garbage.py) -------------


@pytest.mark.parametrize(
    "args",
    [("--stdio",), ("--stdio", "--log-level", "debug")],
    ids=["stdio-flag", "debug-log"],
)
async def test_shutdown_then_exit_is_status_0(
    root: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    # --stdio is what vscode-languageclient appends to the command line.
    async with raw_session(root, tmp_path / "data", *args) as (proc, client):
        client.send(id=2, method="shutdown")
        assert (await client.answer_to(2))["result"] is None
        client.send(method="exit")
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 0


async def test_exit_without_shutdown_is_status_1(root: Path, tmp_path: Path) -> None:
    async with raw_session(root, tmp_path / "data") as (proc, client):
        client.send(method="exit")
        assert await asyncio.wait_for(proc.wait(), SECONDS) == 1


@pytest.mark.parametrize("argv", [["serve"], ["serve", "--stdio"]])
def test_a_plain_serve_skips_the_parser_and_gets_its_answer(argv: list[str]) -> None:
    # An editor's start does not build the parser (issue 29); what it gets must be what the
    # parser would have made of the same words, or an option added to serve goes unseen.
    from server.cli import build_parser, plain_serve

    assert vars(plain_serve(argv)) == vars(build_parser(argv).parse_args(argv))


def test_serve_with_an_option_still_goes_through_the_parser() -> None:
    from server.cli import plain_serve

    assert plain_serve(["serve", "--trusted"]) is None
    assert plain_serve(["serve", "--stdio", "--log-level", "debug"]) is None
