"""A small ACP client for the tests: it runs ``toolhost acp -- AGENT`` and talks to it.

It answers the proxy's ``session/request_permission`` with ``choose(params)`` (an
option id, or None to cancel), records every message it gets, and has the proxy log
everything the proxy sends (``TOOLHOST_ACP_SENT_LOG``), for ``tests.acp.schema``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLHOST = Path(sys.executable).with_name("toolhost")

# A change of two files, one new: one review with both diffs.
PATCH = (
    "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n"
    "*** Add File: b.py\n+y = 1\n*** End Patch"
)

Chooser = Callable[[dict[str, Any]], str | None]


def allow(params: dict[str, Any]) -> str | None:
    return "allow_once"


def reject(params: dict[str, Any]) -> str | None:
    return "reject_once"


@dataclass
class AcpClient:
    process: asyncio.subprocess.Process
    sent_log: Path
    choose: Chooser = allow
    received: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._reader = asyncio.get_running_loop().create_task(self._read())

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())

    async def request(self, method: str, params: Any, timeout: float = 120) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(future, timeout)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            message = json.loads(line)
            self.received.append(message)
            if "method" in message and "id" in message:
                self._answer(message)
            elif "method" not in message:
                future = self._waiting.pop(message.get("id"), None)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(AcpFailure(message["error"]))
                    else:
                        future.set_result(message.get("result"))
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(AcpFailure({"message": "the proxy closed stdout"}))

    def _answer(self, message: dict[str, Any]) -> None:
        if message["method"] != "session/request_permission":
            error = {"code": -32601, "message": f"the test client has no {message['method']}"}
            self._write({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        self.permission_requests.append(message["params"])
        option = self.choose(message["params"])
        outcome = (
            {"outcome": "cancelled"}
            if option is None
            else {"outcome": "selected", "optionId": option}
        )
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [
            m["params"]["update"] for m in self.received if m.get("method") == "session/update"
        ]
        return [u for u in found if kind is None or u.get("sessionUpdate") == kind]

    def sent(self) -> list[dict[str, Any]]:
        """Everything the proxy wrote, to the client and to the agent."""
        if not self.sent_log.exists():
            return []
        return [json.loads(line) for line in self.sent_log.read_text().splitlines()]

    async def initialize(self) -> Any:
        return await self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                "clientInfo": {"name": "toolhost-tests", "version": "1"},
            },
        )

    async def new_session(self, cwd: Path, mcp_servers: list[Any] | None = None) -> str:
        result = await self.request(
            "session/new", {"cwd": str(cwd), "mcpServers": mcp_servers or []}
        )
        return str(result["sessionId"])

    async def prompt(self, session: str, text: str, timeout: float = 240) -> Any:
        return await self.request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
            timeout,
        )


class AcpFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message")))
        self.error = error


@contextlib.asynccontextmanager
async def proxy(
    agent: list[str],
    cwd: Path,
    env: dict[str, str],
    tmp: Path,
    *,
    options: tuple[str, ...] = (),
    choose: Chooser = allow,
) -> AsyncIterator[AcpClient]:
    """``toolhost acp [options] -- agent`` in ``cwd``, with a client on it (not initialized)."""
    sent_log = tmp / "acp-sent.jsonl"
    process = await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "acp",
        *options,
        "--",
        *agent,
        cwd=cwd,
        env={**env, "TOOLHOST_ACP_SENT_LOG": str(sent_log)},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=open(tmp / "acp-stderr.log", "wb"),  # noqa: SIM115
        limit=64 * 1024 * 1024,
    )
    client = AcpClient(process, sent_log, choose)
    client.start()
    try:
        yield client
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            process.kill()
            await process.wait()


def stderr_of(tmp: Path) -> str:
    path = tmp / "acp-stderr.log"
    return path.read_text(errors="replace")[-6000:] if path.exists() else ""


def env_without(prefixes: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def readme_agent(name: str, binary: Path) -> list[str]:
    """The agent's command line from the README's ``toolhost acp -- AGENT …`` snippet
    ``name``, its program replaced by the installed ``binary``."""
    import shlex

    from tests.readme_snippets import snippet

    words = shlex.split(snippet(name))
    assert words[:3] == ["toolhost", "acp", "--"], words
    assert Path(words[3]).name == binary.name, (words, binary)
    return [str(binary), *words[4:]]


def zed_agent(binary: Path) -> list[str]:
    """The agent's command line from the README's Zed ``agent_servers`` snippet (the
    ``toolhost acp -- AGENT …`` Zed would start), its program replaced by ``binary``."""
    import json

    from tests.readme_snippets import snippet

    [entry] = json.loads(snippet("zed-acp"))["agent_servers"].values()
    assert entry["type"] == "custom" and entry["command"] == "toolhost", entry
    args = entry["args"]
    assert args[:2] == ["acp", "--"] and Path(args[2]).name == binary.name, args
    return [str(binary), *args[3:]]
