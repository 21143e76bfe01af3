"""``python wire_tap.py LOG -- COMMAND...``: run an MCP server with a tap on its stdio.

For the tests with real agents: the agent starts this in place of ``toolhost mcp``, and it
starts ``toolhost mcp`` and relays every byte both ways unchanged, appending each line to
LOG as ``{"at": wall clock, "to": "server"|"client", "message": ...}``, so a test knows
when the agent sent ``notifications/cancelled`` and which progress reached it; the
message ``END`` when the agent closed its end (or died). When the
agent closes the pipe (or kills this process), the server's stdin closes too, as it would
have. Standard library only: the agent runs it with this venv's Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

END = "<end of input>"


def main() -> int:
    log_path = sys.argv[1]
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    lock = threading.Lock()

    def record(to: str, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = line.decode(errors="replace")
        with lock, open(log_path, "a") as log:
            log.write(json.dumps({"at": time.time(), "to": to, "message": message}) + "\n")

    def from_server() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            record("client", line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    relay = threading.Thread(target=from_server, daemon=True)
    relay.start()
    for line in sys.stdin.buffer:
        record("server", line)
        server.stdin.write(line)
        server.stdin.flush()
    record("server", END.encode())  # the agent closed the pipe (or died)
    server.stdin.close()
    code = server.wait()
    relay.join(5)
    return code


if __name__ == "__main__":
    sys.exit(main())
