"""A host that goes away mid-session (closes our stdout) ends ``toolhost mcp`` quietly."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.mcp.helpers import TOOLHOST


def line(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_a_host_that_closes_our_stdout_gets_no_traceback(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [str(TOOLHOST), "mcp", "--no-attach", "--cwd", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    server.stdin.write(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
    server.stdin.flush()
    assert b'"id":1' in server.stdout.readline()
    server.stdout.close()  # the host is gone: the next answer meets a broken pipe
    server.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    server.stdin.write(line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    server.stdin.flush()
    time.sleep(1)
    server.stdin.close()
    assert server.wait(30) == 0
    errors = server.stderr.read().decode()
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
