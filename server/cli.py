"""``toolhost``: serve the tools to an editor, list them, or run one from a shell.

    toolhost serve [--stdio | --tcp HOST:PORT | --ws HOST:PORT] [--trusted]
    toolhost list [--model PROVIDER/MODEL] [--agent NAME] [--json] [--cwd DIR] [--trusted]
    toolhost run TOOL 'JSON-ARGS' [--cwd DIR] [--json] [--yes] [--trusted]
    toolhost trust [--cwd DIR] [--revoke]
    toolhost doctor [--json] [--cwd DIR]
    toolhost mcp [--cwd DIR] [--no-attach] [--list-editors [--json]]
    toolhost setup claude|codex|opencode|gemini [--project] [--print] [--cwd DIR]

``list`` and ``run`` read the config files and load the custom tools of ``--cwd`` (the
worktree) as the server does; ``list`` ends with a line per file that could not be
used or was ignored (and why), and marks custom tools (and the built-ins they replace).

A folder whose own config or tool files were never trusted (``tools.permission.trust``) is
served restricted: its config only restricts, its tools are not loaded, and every
tool but the read-only ones asks.  ``--trusted`` trusts it for one command;
``toolhost trust`` records it as trusted (until one of those files changes).

``doctor`` lists what works here for that project (server/doctor.py): the sandbox and
what the kernel enforces, the config, the programs the tools need.

Exit codes: 0 success, 1 the tool reported an error (``isError``) or a doctor check
failed, 2 bad usage.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import argparse

LOOPBACK = "127.0.0.1"
USAGE_ERROR = 2


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT``; the host defaults to loopback."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.strip("[]") or LOOPBACK
    if not port.isdigit() or int(port) > 65535:
        import argparse

        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port number, got {value!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_OWN_MODULE_COMMANDS = {
    "mcp": ("server.mcp.main", "serve the tools to an MCP host over stdio"),
    "acp": ("server.acp.main", "run an ACP agent with toolhost in between"),
    "undo": ("server.undo_cli", "put an agent's turn back"),
    "setup": ("server.setup.main", "register toolhost in an agent's config, its tools off"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """Every command, with the options of the one ``argv`` runs: the others' are never
    parsed, and argparse builds a help formatter for each option it is given."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="toolhost",
        description="OpenCode's agent tools as an editor sidecar.",
        formatter_class=_help_formatter,
    )
    # An explicit prog keeps argparse from building a help formatter on every start.
    commands = parser.add_subparsers(dest="command", required=True, prog="toolhost")
    chosen = next((word for word in argv if not word.startswith("-")), None)
    for name, summary in _COMMANDS.items():
        command = commands.add_parser(name, help=summary, formatter_class=_help_formatter)
        if name == chosen:
            _OPTIONS[name](command)
    # These commands' options live in their own modules (setup's pull in a TOML library).
    for name, (module, summary) in _OWN_MODULE_COMMANDS.items():
        command = commands.add_parser(name, help=summary, formatter_class=_help_formatter)
        if name == chosen:
            import importlib

            importlib.import_module(module).add_arguments(command)
    return parser


def _help_formatter(prog: str) -> argparse.HelpFormatter:
    """argparse's own formatter, as wide as the terminal, found as ``shutil`` finds it
    without importing it (and lzma and bz2 with it): argparse makes a formatter for every
    option it is given, to check its metavar."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    import argparse

    return argparse.HelpFormatter(prog, width=columns - 2)


def _serve_options(serve: argparse.ArgumentParser) -> None:
    where = serve.add_mutually_exclusive_group()
    # vscode-languageclient appends --stdio to the server's command line.
    where.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    where.add_argument("--tcp", type=parse_address, metavar="HOST:PORT", help="listen on TCP")
    where.add_argument("--ws", type=parse_address, metavar="HOST:PORT", help="listen on WebSocket")
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --ws: a browser origin (e.g. https://app.example) that may connect; "
        "upgrades from any other origin are refused",
    )
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    _trusted_flag(serve)


def _list_options(listing: argparse.ArgumentParser) -> None:
    listing.add_argument("--model", metavar="PROVIDER/MODEL", help="filter for this model")
    listing.add_argument(
        "--agent",
        default="build",
        metavar="NAME",
        help="as tools/list's agent: an agent whose rules deny a tool outright is not offered it",
    )
    listing.add_argument("--json", action="store_true", help="print the tools/list result")
    listing.add_argument("--cwd", type=Path, default=Path.cwd(), metavar="DIR")
    _trusted_flag(listing)


def _run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument("tool", help="tool id, e.g. read")
    run.add_argument("args", help="the tool's arguments as a JSON object")
    run.add_argument("--cwd", type=Path, default=Path.cwd(), metavar="DIR")
    run.add_argument("--json", action="store_true", help="print the whole ToolResult")
    run.add_argument("--yes", action="store_true", help="approve every permission ask")
    _trusted_flag(run)


def _trust_options(trusting: argparse.ArgumentParser) -> None:
    trusting.add_argument("--cwd", type=Path, default=Path.cwd(), metavar="DIR")
    trusting.add_argument("--revoke", action="store_true", help="forget the folder instead")


def _doctor_options(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--json", action="store_true", help="print {checks: [{name, ok, detail}]}")
    doctor.add_argument("--cwd", type=Path, default=Path.cwd(), metavar="DIR")


_COMMANDS = {
    "serve": "serve the tools over JSON-RPC (stdio by default)",
    "list": "print the tools a model is offered",
    "run": "run one tool and print its output",
    "trust": "trust a folder's own config and tool files (until one changes)",
    "doctor": "check what works here (the sandbox first)",
}
_OPTIONS = {
    "serve": _serve_options,
    "list": _list_options,
    "run": _run_options,
    "trust": _trust_options,
    "doctor": _doctor_options,
}


def _trusted_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--trusted",
        action="store_true",
        help="trust the folder: its own config may loosen the rules and its tools load "
        "(an editor that says it does not trust the folder still wins)",
    )


# What editors run (vscode-languageclient appends --stdio): ``serve`` with its defaults.
_PLAIN_SERVE = {("serve",): False, ("serve", "--stdio"): True}


def plain_serve(argv: Sequence[str]) -> argparse.Namespace | None:
    """What the parser makes of ``argv`` when it is a plain ``serve``, without building it:
    argparse's import and the parser were ~5 ms of every editor's start (issue 29).
    tests/wire/test_cli_usage.py holds it to the parser's answer."""
    stdio = _PLAIN_SERVE.get(tuple(argv))
    if stdio is None:
        return None
    from types import SimpleNamespace

    parsed = SimpleNamespace(
        command="serve",
        stdio=stdio,
        tcp=None,
        ws=None,
        allow_origin=[],
        log_level="info",
        trusted=False,
    )
    return cast("argparse.Namespace", parsed)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    args = plain_serve(argv) or build_parser(argv).parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "list":
        return list_tools(args)
    if args.command == "mcp":
        from server.mcp.main import main as mcp_main

        return mcp_main(args)
    if args.command == "acp":
        from server.acp.main import main as acp_main

        return acp_main(args)
    if args.command == "setup":
        from server.setup.main import main as setup_main

        return setup_main(args)
    if args.command == "trust":
        return trust_folder(args)
    if args.command == "doctor":
        return run_doctor(args)
    if args.command == "undo":
        from server import undo_cli

        return undo_cli.main(args)
    return run_tool(args)


def serve(args: argparse.Namespace) -> int:
    import gc

    # Start-up allocates several hundred thousand long-lived objects (lsprotocol's
    # types); collecting garbage among them only delays the initialize answer.
    # server.sidecar.settle_memory turns collection back on once the tools are loaded
    # and the first calls answered.
    gc.disable()
    from server.logs import setup_logging

    setup_logging(args.log_level)
    transport, address = "stdio", (LOOPBACK, 0)
    if args.tcp or args.ws:
        transport, address = ("tcp", args.tcp) if args.tcp else ("ws", args.ws)
        if not is_loopback(address[0]):
            import logging

            logging.getLogger("toolhost").warning(
                "listening on %s, which is not a loopback address: anyone who can reach it "
                "can run tools on this machine",
                address[0],
            )
    from server.app import create_server, run

    server = create_server()
    server.trusted_by_cli = args.trusted
    return run(server, transport, *address, origins=tuple(args.allow_origin))


def list_tools(args: argparse.Namespace) -> int:
    import gc

    # A listing allocates only what it prints and then exits: collecting garbage among
    # the tens of thousands of objects the imports make is time spent for nothing (5 ms).
    gc.disable()
    from tools.editor import EditorBridge

    model = None
    if args.model:
        model = _model(args.model)
        if model is None:
            return _usage(f"--model must be PROVIDER/MODEL, e.g. openai/gpt-5 (got {args.model!r})")
    from tools.worktree import open_worktree, problem_lines, problems

    _recover()
    directory = _directory(args.cwd)
    trust = _trust(directory, args.trusted)
    host, loaded = open_worktree(directory, trusted=trust.trusted)
    try:
        tools = host.offered(
            model=model, capabilities=EditorBridge().capabilities(), agent=args.agent
        )
        found = problems(loaded, host)
        if args.json:
            listing = {
                "tools": [tool.to_wire() for tool in tools],
                "overridden": sorted(host.registry.overridden),
                "problems": [problem.to_json() for problem in found],
                "trusted": trust.trusted,
                "trust": trust.reason,
            }
            print(json.dumps(listing, indent=2))
            return 0
        width = max((len(tool.id) for tool in tools), default=0)
        for tool in tools:
            first_line = tool.description.strip().splitlines()[0] if tool.description else ""
            print(f"{tool.id:<{width}}  {first_line}{_origin(host, tool.id)}")
        if not trust.trusted:
            print(f"\nthis folder is not trusted: {trust.reason}")
        if found:
            print()
            for line in problem_lines(loaded, host):
                print(line)
    finally:
        host.close()
    return 0


def run_tool(args: argparse.Namespace) -> int:
    try:
        tool_args = json.loads(args.args)
    except ValueError as error:
        return _usage(
            f"the arguments are not valid JSON ({error}); pass an object such as "
            '\'{"filePath": "README.md"}\''
        )
    if not isinstance(tool_args, dict):
        return _usage(
            "the arguments must be a JSON object of named arguments, "
            f'e.g. \'{{"filePath": "README.md"}}\' (got {args.args!r})'
        )
    import asyncio

    from tools.editor import EditorBridge
    from tools.worktree import open_worktree, problem_lines

    _recover()
    directory = _directory(args.cwd)
    trust = _trust(directory, args.trusted)
    if not trust.trusted:
        print(f"toolhost: warning: this folder is not trusted: {trust.reason}", file=sys.stderr)
    # Each run is a fresh session, so "read the file first" could never be satisfied.
    host, loaded = open_worktree(directory, trusted=trust.trusted, read_before_write=False)
    for line in problem_lines(loaded, host):
        print(f"toolhost: warning: {line}", file=sys.stderr)
    try:
        result = asyncio.run(
            host.execute(args.tool, tool_args, editor=EditorBridge(approve_all=args.yes))
        )
    finally:
        host.close()
    if args.json:
        print(json.dumps(result.to_wire(), indent=2))
    else:
        print(result.output, file=sys.stderr if result.is_error else sys.stdout)
    return 1 if result.is_error else 0


def run_doctor(args: argparse.Namespace) -> int:
    from server import doctor

    checks = doctor.run(_directory(args.cwd))
    if args.json:
        print(json.dumps({"checks": [c.to_json() for c in checks]}, indent=2))
    else:
        print(doctor.format_text(checks))
    return 0 if all(c.ok for c in checks) else 1


def trust_folder(args: argparse.Namespace) -> int:
    from tools.permission import trust

    directory = _directory(args.cwd)
    if args.revoke:
        known = trust.revoke(directory)
        print(f"{directory} is {'no longer' if known else 'not'} trusted")
        return 0
    names = trust.trust(directory)
    listed = ", ".join(names) if names else "none yet"
    print(
        f"trusted {directory} with its config and tool files ({listed}); a change to any "
        "of them needs trusting again"
    )
    return 0


def _trust(directory: Path, trusted: bool) -> Any:
    from tools.permission.trust import decide

    return decide(directory, None, command_line=trusted)


def _recover() -> None:
    """Undo what a killed toolhost left half done, and say so."""
    from tools.worktree import recover_interrupted_changes

    for line in recover_interrupted_changes():
        print(f"toolhost: warning: recovery: {line}", file=sys.stderr)


def _origin(host: Any, tool_id: str) -> str:
    if tool_id in host.registry.overridden:
        return f"  (custom, replaces built-in {tool_id})"
    return "  (custom)" if host.registry.is_custom(tool_id) else ""


def _model(value: str) -> Any:
    from tools.model import ModelRef

    provider, sep, model = value.partition("/")
    return ModelRef(provider, model) if sep and provider and model else None


def _directory(path: Path) -> Path:
    if not path.is_dir():
        raise SystemExit(_usage(f"--cwd {path} is not a directory"))
    return path.resolve()


def _usage(message: str) -> int:
    print(f"toolhost: {message}", file=sys.stderr)
    return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
