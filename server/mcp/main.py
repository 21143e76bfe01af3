"""``toolhost mcp``: serve the catalogue to an MCP host over stdio.

It attaches to the sidecar of an editor that has this folder open (found through
the sidecars' lock files) and forwards every call there, so reads see the
editor's unsaved buffers and edits go through its review and undo; without one
(or with ``--no-attach``) it serves the folder itself.  If the editor goes away,
it carries on alone and tells the client that the tool list changed.

Spawned once per agent session, so start-up stays small: neither pygls nor the
tool framework is imported before the handshake, and an attached server never
imports the tool framework at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

# server.cli imports this module for every command: only argparse's needs at the top.


CLIENT_GONE = (BrokenPipeError, ConnectionResetError)


def main(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="toolhost mcp: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    directory = Path(os.path.abspath(args.cwd))
    if not directory.is_dir():
        print(f"toolhost: --cwd {directory} is not a directory", file=sys.stderr)
        return 2
    if args.list_editors:
        from server.mcp.editors import print_editors

        return print_editors(directory, as_json=args.json)
    try:
        asyncio.run(serve(args, directory))
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:
        # The host went away mid-answer (it closed our stdout): nobody is left to tell,
        # so a line on stderr, not the SDK's task-group traceback.
        if group.split(CLIENT_GONE)[1] is not None:
            raise
    except CLIENT_GONE:
        pass
    else:
        return 0
    logging.getLogger("toolhost.mcp").info("the MCP client closed the connection")
    return 0


async def serve(args: argparse.Namespace, directory: Path) -> None:
    import logging
    import uuid

    from server.children import watch_children_by_pidfd
    from server.mcp.stdio import serve_stdio

    watch_children_by_pidfd()
    log = logging.getLogger("toolhost.mcp")
    session_id = f"ses_mcp{uuid.uuid4().hex[:20]}"
    backend = await choose_backend(args, directory, session_id)
    log.info("serving %s", backend.describe)
    await backend.start()  # loading starts now, while the client sends its handshake
    try:
        await serve_stdio(backend)
    finally:
        await backend.close()


async def choose_backend(args: argparse.Namespace, directory: Path, session_id: str) -> Any:
    model = _model(args.model)
    if not args.no_attach:
        from server.mcp.attached import attach
        from server.mcp.editors import choose_editor

        editor = choose_editor(directory)
        if editor is not None:
            backend = await attach(
                editor,
                session_id=session_id,
                agent=args.agent,
                model=model,
                fallback=lambda: _local(directory, session_id, args.agent, model, args.trusted),
            )
            if backend is not None:
                return backend
    return _local(directory, session_id, args.agent, model, args.trusted)


def _local(
    directory: Path,
    session_id: str,
    agent: str,
    model: tuple[str, str] | None,
    trusted: bool = False,
) -> Any:
    from server.mcp.local import LocalBackend

    return LocalBackend(directory, session_id=session_id, agent=agent, model=model, trusted=trusted)


def _model(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    provider, _, model = value.partition("/")
    return (provider, model) if provider and model else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``toolhost mcp``'s options (server.cli registers the sub-command)."""
    parser.add_argument(
        "--cwd",
        type=Path,
        default=Path.cwd(),
        metavar="DIR",
        help="the project folder (default: the current directory)",
    )
    parser.add_argument(
        "--no-attach",
        action="store_true",
        help="serve this folder alone, even when an editor's toolhost has it open",
    )
    parser.add_argument(
        "--list-editors",
        action="store_true",
        help="show the editors' toolhost sidecars, and which one this folder would attach to",
    )
    parser.add_argument("--json", action="store_true", help="with --list-editors: print JSON")
    parser.add_argument("--model", metavar="PROVIDER/MODEL", help="offer the tools for this model")
    parser.add_argument("--agent", default="build", metavar="NAME", help="the agent's rules")
    parser.add_argument(
        "--trusted",
        action="store_true",
        help="alone: trust the folder, so its own config may loosen the rules and its tools "
        "load (attached, the editor decides)",
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="warning"
    )
