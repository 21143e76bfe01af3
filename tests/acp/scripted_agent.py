"""A scripted ACP agent for testing ``toolhost acp`` without a model or npm.

Run as ``python -m tests.acp.scripted_agent``.  It answers ``initialize`` and
``session/new`` (remembering the ``mcpServers`` it was given and the client's
capabilities), and takes each ``session/prompt``'s text as a JSON list of steps:

- ``{"mcp": TOOL, "args": {...}}``: start the ``toolhost`` entry of ``mcpServers``
  with the official MCP SDK (once per session) and call TOOL;
- ``{"request": METHOD, "params": {...}}``: send METHOD to the client (the proxy),
  ``sessionId`` filled in, e.g. ``fs/write_text_file`` or ``terminal/create``;
- ``{"terminal": PARAMS}``: ``terminal/create``, ``terminal/wait_for_exit`` and
  ``terminal/output`` in a row;
- ``{"write": PATH, "text": TEXT}`` / ``{"remove": PATH}``: change a file itself, as an
  agent's own built-in tool does (toolhost does not see it happen);
- ``{"exit": CODE}``: exit at once, mid-prompt;
- ``{"hang": true}``: never answer this prompt.

Each step's result (or error) is reported as an ``agent_message_chunk`` whose text is
JSON ``{"step": i, "result": ...}``, and the prompt ends with ``end_turn``.
``SCRIPTED_AGENT_LOG`` names a file that gets one JSON line per message received.
``SCRIPTED_AGENT_SETUP`` names the state file a first start makes (as OpenCode makes its
database): while one start makes it (a second), another start at the same time exits 1
with "database is locked". With ``SCRIPTED_AGENT_STAYS`` set it does not exit when its
stdin closes (as codex-acp).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

if os.environ.get("SCRIPTED_AGENT_HANG_AT_START"):
    import time

    time.sleep(3600)


def set_up(state: str) -> None:
    """A first start's setup, which two starts at once break."""
    import fcntl
    import time

    if os.path.exists(state):
        return
    with open(state + ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("Error: database is locked", file=sys.stderr)
            sys.exit(1)
        time.sleep(1)
        if not os.path.exists(state):
            with open(state, "w") as made:
                made.write("set up\n")


class Agent:
    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.servers: dict[str, list[dict[str, Any]]] = {}
        self.mcp: dict[str, tuple[ClientSession, contextlib.AsyncExitStack]] = {}
        self.log = os.environ.get("SCRIPTED_AGENT_LOG")
        self.out = sys.stdout.buffer
        self.tasks: set[asyncio.Task[None]] = set()

    def write(self, message: dict[str, Any]) -> None:
        self.out.write((json.dumps(message) + "\n").encode())
        self.out.flush()

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = future
        self.write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await future

    async def run(self) -> None:
        if os.environ.get("SCRIPTED_AGENT_SETUP"):
            set_up(os.environ["SCRIPTED_AGENT_SETUP"])
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            message = json.loads(line)
            if self.log:
                with open(self.log, "a") as handle:
                    handle.write(json.dumps(message) + "\n")
            if "method" not in message:
                future = self.waiting.pop(message["id"], None)
                if future is not None:
                    if "error" in message:
                        future.set_result({"error": message["error"]})
                    else:
                        future.set_result(message.get("result"))
                continue
            if "id" in message:
                task = loop.create_task(self.answer(message))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
        if os.environ.get("SCRIPTED_AGENT_STAYS"):  # as codex-acp: its MCP clients hold it
            await asyncio.sleep(3600)
        os._exit(0)  # stdin closed: gone at once (its MCP clients would hold the exit)

    async def answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        result: Any
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "session/new":
            session = f"sess_{len(self.servers) + 1}"
            self.servers[session] = params.get("mcpServers") or []
            result = {"sessionId": session}
        elif method == "session/prompt":
            result = await self.prompt(params)
            if result is None:
                return
        else:
            self.write(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"no {method}"},
                }
            )
            return
        self.write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any] | None:
        session = params["sessionId"]
        steps = json.loads(params["prompt"][0]["text"])
        for number, step in enumerate(steps):
            if "exit" in step:
                os._exit(step["exit"])
            if step.get("hang"):
                return None
            try:
                result = await self.step(session, step)
            except Exception as error:  # reported to the test, not lost in a task
                result = {"exception": repr(error)}
            self.write(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": session,
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {
                                "type": "text",
                                "text": json.dumps({"step": number, "result": result}),
                            },
                        },
                    },
                }
            )
        return {"stopReason": "end_turn"}

    async def step(self, session: str, step: dict[str, Any]) -> Any:
        if "mcp" in step:
            client = await self.mcp_client(session)
            called = await client.call_tool(step["mcp"], step.get("args") or {})
            text = "".join(getattr(block, "text", "") for block in called.content)
            return {"isError": called.is_error, "text": text}
        if "write" in step:
            with open(step["write"], "w") as file:
                file.write(step["text"])
            return {"wrote": step["write"]}
        if "remove" in step:
            os.remove(step["remove"])
            return {"removed": step["remove"]}
        if "request" in step:
            return await self.request(step["request"], {"sessionId": session, **step["params"]})
        if "terminal" in step:
            created = await self.request(
                "terminal/create", {"sessionId": session, **step["terminal"]}
            )
            if "error" in created:
                return created
            ids = {"sessionId": session, "terminalId": created["terminalId"]}
            exited = await self.request("terminal/wait_for_exit", ids)
            output = await self.request("terminal/output", ids)
            await self.request("terminal/release", ids)
            return {"exit": exited, "output": output}
        return {"error": f"unknown step {step}"}

    async def mcp_client(self, session: str) -> ClientSession:
        if session not in self.mcp:
            entry = next(s for s in self.servers[session] if s["name"] == "toolhost")
            env = {**os.environ, **{e["name"]: e["value"] for e in entry.get("env", [])}}
            stack = contextlib.AsyncExitStack()
            params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
            client = await stack.enter_async_context(ClientSession(read, write))
            await client.initialize()
            self.mcp[session] = (client, stack)
        return self.mcp[session][0]


if __name__ == "__main__":
    asyncio.run(Agent().run())
