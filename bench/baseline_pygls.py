"""Baseline for the spawn benchmark: the smallest useful pygls 2.1 server.

One custom method, stdio, nothing else: what any pygls-based sidecar pays before
it does anything of its own.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("bench-baseline", "0.1")


@server.feature("bench/echo")
def echo(ls: LanguageServer, params: Any) -> Any:
    return params


if __name__ == "__main__":
    server.start_io()
