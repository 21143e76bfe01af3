"""``toolhost acp -- AGENT [ARGS...]``: the command line of the ACP proxy."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-review",
        action="store_true",
        help="do not review every edit and command by default (the config's rules still ask)",
    )
    parser.add_argument(
        "--no-attach",
        action="store_true",
        help="never use an editor's toolhost: reviews go to the ACP client",
    )
    parser.add_argument(
        "--keep-agent-tools",
        action="store_true",
        help="leave the agent's own edit, write and shell tools on",
    )
    parser.add_argument(
        "--model",
        metavar="PROVIDER/MODEL",
        help="offer toolhost's tools for this model (GPT models get apply_patch)",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="fail initialize, session/new or session/load the agent has not answered by then",
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="warning"
    )
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- the ACP agent's command line")


def main(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from server.acp.agents import prepare
    from server.acp.proxy import Proxy

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="toolhost acp: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    argv = list(args.agent)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("toolhost acp: name the agent to run: toolhost acp -- opencode acp", file=sys.stderr)
        return 2
    agent = prepare(argv, own_tools_off=not args.keep_agent_tools)
    proxy = Proxy(
        agent,
        review=not args.no_review,
        attach=not args.no_attach,
        start_timeout=args.start_timeout,
        model=args.model,
    )
    try:
        return asyncio.run(proxy.run())
    except KeyboardInterrupt:
        return 130
