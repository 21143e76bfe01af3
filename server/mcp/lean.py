"""The handshake-era MCP door: ``toolhost mcp`` for clients that open with ``initialize``.

Every MCP host people run (Claude Code, Codex, OpenCode, Gemini CLI) speaks a handshake
revision (2024-11-05 through 2025-11-25) over stdio: newline-delimited JSON-RPC. This door
serves those revisions itself, without the MCP SDK: importing the SDK takes about a second
(its pydantic models), longer than the Node reference server takes to answer its first
call, and it validates every message twice. What it serves is what the SDK served, message
for message (``tests/mcp/test_lean_door.py`` holds the two doors to the same answers):

- ``initialize`` (the client's revision when it is a handshake one, else 2025-11-25),
  ``notifications/initialized``, ``ping``;
- ``tools/list`` and ``tools/call`` (refused with -32602 before ``initialize``), a call's
  ``progressToken`` as ``notifications/progress`` with a heartbeat while the tool is quiet
  (``server.mcp.progress``), ``notifications/cancelled`` cancelling the call (which is
  then not answered);
- a permission ask as ``elicitation/create`` (a form) when the client declared
  elicitation, and ``notifications/tools/list_changed`` when the catalogue changes;
- -32601 for every other method, -32700 for a line that is not JSON.

A client that opens with anything else (the 2026-07-28 revision's ``server/discover`` or
its per-request envelope) is handed to the SDK's door (``server.mcp.server``), with the
lines read so far.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

import orjson

from server import __version__
from server.mcp.backend import Backend, CallHooks, turn_of
from server.mcp.catalogue import error_result, mcp_result, mcp_tool
from server.mcp.progress import CallProgress
from server.mcp.prompts import ASK_SCHEMA, INSTRUCTIONS, ask_message, reply_of

log = logging.getLogger("toolhost.mcp")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
PARSE_ERROR, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32601, -32602
# Answered before ``initialize`` as after it; the other served methods wait for it.
BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
SERVED = frozenset({"initialize", "ping", "tools/list", "tools/call"})

Write = Callable[[bytes], None]


def opens_a_handshake(message: Any) -> bool:
    """Whether a connection's first message is a handshake-era ``initialize`` request."""
    return (
        isinstance(message, dict)
        and message.get("method") == "initialize"
        and "id" in message
        and not _has_envelope(message.get("params"))
    )


def _has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and any(
        str(key).startswith("io.modelcontextprotocol/") for key in meta
    )


class LeanMcp:
    """One MCP connection over a byte writer (this process serves one client)."""

    def __init__(self, backend: Backend, write: Write) -> None:
        self.backend = backend
        backend.on_changed = self.tools_changed
        self._write = write
        self.initialized = False  # an initialize was answered
        self.client_capabilities: dict[str, Any] = {}
        self._calls: dict[Any, asyncio.Task[dict[str, Any]]] = {}  # request id -> its task
        self._cancelled: set[Any] = set()  # request ids the client cancelled
        self._progress_of: dict[Any, CallProgress] = {}  # a running call's notifications
        self._answers: dict[Any, asyncio.Future[Any]] = {}  # our request id -> its answer
        self._ids = itertools.count(1)
        self.closed = False

    # -- the wire ---------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if not self.closed:
            self._write(orjson.dumps(message) + b"\n")

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def fail(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def receive_line(self, line: bytes) -> None:
        """One line from the client."""
        if not line.strip():
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            log.warning("not JSON, ignored: %.200r", line)
            self.fail(None, PARSE_ERROR, "Parse error")
            return
        self.receive(message)

    def receive(self, message: Any) -> None:
        if not isinstance(message, dict):
            self.fail(None, -32600, "Invalid Request")
            return
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if "id" in message:
                self._request(message["id"], method, params)
            else:
                self._notification(method, params)
        elif "id" in message and ("result" in message or "error" in message):
            future = self._answers.pop(message["id"], None)
            if future is not None and not future.done():
                future.set_result(message)

    def close(self) -> None:
        """The client is gone: stop writing, end the calls and the asks in flight."""
        self.closed = True
        for progress in self._progress_of.values():
            progress.end()
        for task in list(self._calls.values()):
            task.cancel()
        for future in self._answers.values():
            if not future.done():
                future.set_result(None)

    async def wind_down(self) -> None:
        """Wait for the cancelled calls to end (their processes with them)."""
        if self._calls:
            await asyncio.gather(*self._calls.values(), return_exceptions=True)

    # -- requests ---------------------------------------------------------------

    def _request(self, request_id: Any, method: str, params: Any) -> None:
        if method not in SERVED:
            self.fail(request_id, METHOD_NOT_FOUND, "Method not found", method)
        elif not self.initialized and method not in BEFORE_INITIALIZE:
            self.fail(request_id, INVALID_PARAMS, "Invalid request parameters", "")
        elif method == "initialize":
            self._initialize(request_id, params)
        elif method == "ping":
            self.answer(request_id, {})
        else:
            if method == "tools/list":
                coroutine = self._list(params)
            else:
                coroutine = self._call(params, request_id)
            task = asyncio.get_running_loop().create_task(coroutine)
            self._calls[request_id] = task
            task.add_done_callback(lambda done: self._finished(request_id, done))

    def _finished(self, request_id: Any, task: asyncio.Task[Any]) -> None:
        self._calls.pop(request_id, None)
        if request_id in self._cancelled:
            self._cancelled.discard(request_id)  # a cancelled request is not answered
            return
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, _InvalidParams):
            self.fail(request_id, INVALID_PARAMS, "Invalid request parameters", "")
        elif error is not None:
            log.error("%s failed", request_id, exc_info=error)
            self.fail(request_id, -32603, f"Internal error: {error}")
        else:
            self.answer(request_id, task.result())

    def _initialize(self, request_id: Any, params: Any) -> None:
        if not (
            isinstance(params, dict)
            and isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict)
            and isinstance(params.get("clientInfo"), dict)
        ):
            self.fail(request_id, INVALID_PARAMS, "Invalid request parameters", "")
            return
        asked = params["protocolVersion"]
        self.client_capabilities = params["capabilities"]
        self.initialized = True
        self.answer(
            request_id,
            {
                "capabilities": {"tools": {"listChanged": True}},
                "instructions": INSTRUCTIONS,
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE,
                "serverInfo": {"name": "toolhost", "title": "toolhost", "version": __version__},
            },
        )

    async def _list(self, params: Any) -> dict[str, Any]:
        if params is not None and not isinstance(params, dict):
            raise _InvalidParams
        return {"tools": [mcp_tool(tool) for tool in await self.backend.list_tools()]}

    async def _call(self, params: Any, request_id: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise _InvalidParams
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise _InvalidParams
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        elicit = self._elicit if self._can_elicit() else None
        progress = self._progress(token)
        if progress is not None:
            self._progress_of[request_id] = progress
        hooks = CallHooks(progress.push if progress is not None else _ignore, elicit, turn_of(meta))
        name = params["name"]
        try:
            return mcp_result(await self.backend.call(name, arguments or {}, hooks))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a fault outside the tool: the client still gets a result
            log.exception("tools/call %s failed", name)
            return error_result(
                f"toolhost failed unexpectedly while running {name} ({error}). You may "
                "retry, or continue another way."
            )
        finally:
            if progress is not None:
                progress.end()
                self._progress_of.pop(request_id, None)

    # -- what a call sends the client -------------------------------------------

    def _progress(self, token: Any) -> CallProgress | None:
        """The call's progress notifications and heartbeat; None without a token."""
        if not isinstance(token, str | int) or isinstance(token, bool):
            return None

        def send(count: int, message: str) -> None:
            params = {"progressToken": token, "progress": count, "message": message}
            self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

        progress = CallProgress(send)
        progress.start()
        return progress

    def _can_elicit(self) -> bool:
        """The client declared form elicitation (an empty ``elicitation`` means form)."""
        elicitation = self.client_capabilities.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        return "form" in elicitation or "url" not in elicitation

    async def _elicit(self, ask: dict[str, Any]) -> dict[str, Any] | None:
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = future
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": ask_message(ask),
                    "requestedSchema": ASK_SCHEMA,
                },
            }
        )
        try:
            answer = await future
        finally:
            self._answers.pop(request_id, None)
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict):  # an error answer, or the client went away
            log.warning("elicitation for %s failed: %s", ask.get("tool"), answer)
            return None
        return reply_of(result.get("action"), result.get("content"))

    # -- notifications ----------------------------------------------------------

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/initialized":
            return
        if method == "notifications/cancelled":
            request_id = params.get("requestId") if isinstance(params, dict) else None
            task = self._calls.get(request_id)
            if task is not None:
                self._cancelled.add(request_id)
                progress = self._progress_of.pop(request_id, None)
                if progress is not None:  # not a word more about a withdrawn call
                    progress.end()
                task.cancel()

    async def tools_changed(self) -> None:
        """Tell the client to list the tools again."""
        if self.initialized:
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


class _InvalidParams(Exception):
    """A request's params do not have the shape its method needs."""


def _ignore(update: dict[str, Any]) -> None:
    pass
