"""A scripted OpenAI-compatible chat model on 127.0.0.1, for driving real agents.

The one thing this machine cannot have is a model provider.  ``ScriptedModel``
answers ``POST /v1/chat/completions`` (streamed as server-sent events, or as one
JSON body) from a script: each turn of the conversation that offers tools gets the
next step, a tool call or a final text.  Requests that offer no tools (an agent's
title or summary calls) get a short text and do not use up a step.  Every request
body is recorded, so a test can check that a tool's result reached the model
(``GET /recorded`` returns them, for a test running in another process).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeVar


class _HasPort(Protocol):
    port: int


Served = TypeVar("Served", bound=_HasPort)


@dataclass
class ToolCall:
    name: str  # as the agent names the tool, e.g. "toolhost_read" for an MCP server's read
    arguments: dict[str, Any]


@dataclass
class Reply:
    text: str


Step = ToolCall | Reply | Callable[[dict[str, Any]], "ToolCall | Reply"]


@dataclass
class ScriptedModel:
    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)  # tool-offering turns
    other_requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # What a request that is not a turn of the conversation (an agent's title call) gets.
    aside = "Scripted title"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def is_turn(self, body: dict[str, Any]) -> bool:
        """A request offering tools is a turn of the conversation: it takes the next step."""
        return bool(body.get("tools"))

    def next_step(self, body: dict[str, Any]) -> ToolCall | Reply:
        with self._lock:
            if not self.is_turn(body):
                self.other_requests.append(body)
                return Reply(self.aside)
            self.requests.append(body)
            index = len(self.requests) - 1
        if index >= len(self.steps):
            return Reply("The script has ended.")
        step = self.steps[index]
        return step(body) if callable(step) else step


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a chat request carries (OpenAI ``role: tool`` messages)."""
    found = []
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            found.append(str(content))
    return found


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _stream(step: ToolCall | Reply, call_number: int) -> bytes:
    if isinstance(step, Reply):
        return (
            _chunk({"role": "assistant", "content": step.text})
            + _chunk({}, "stop")
            + _usage()
            + b"data: [DONE]\n\n"
        )
    call = {
        "index": 0,
        "id": f"call_scripted_{call_number}",
        "type": "function",
        "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
    }
    return (
        _chunk({"role": "assistant", "content": None, "tool_calls": [call]})
        + _chunk({}, "tool_calls")
        + _usage()
        + b"data: [DONE]\n\n"
    )


def _usage() -> bytes:
    payload = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _whole(step: ToolCall | Reply, call_number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "tool_calls"
    if isinstance(step, Reply):
        message["content"] = step.text
        finish = "stop"
    else:
        message["tool_calls"] = [
            {
                "id": f"call_scripted_{call_number}",
                "type": "function",
                "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
            }
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class ScriptedHandler(BaseHTTPRequestHandler):
    """What every scripted model server's handler shares: no access log, one whole
    answer per connection."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _json_body(self, not_json: bytes = b'{"error": "not JSON"}') -> Any | None:
        """The request's JSON body; None when it is not JSON (answered 400 with ``not_json``)."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            return json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, "application/json", not_json)
            return None


def serve_on_loopback(
    model: Served, handler: type[BaseHTTPRequestHandler], name: str
) -> Iterator[Served]:
    """Serve ``handler`` on a free loopback port (``model.port``) until the generator is
    closed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    model.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    calls = iter(range(1, 1_000_000))

    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/recorded"):  # for a test running elsewhere
                with model._lock:
                    recorded = {"requests": model.requests, "other": model.other_requests}
                self._send(200, "application/json", json.dumps(recorded).encode())
                return
            # /v1/models, which some clients probe
            body = json.dumps({"object": "list", "data": [{"id": "scripted"}]}).encode()
            self._send(200, "application/json", body)

        def do_POST(self) -> None:
            body = self._json_body()
            if body is None:
                return
            step = model.next_step(body)
            number = next(calls)
            if body.get("stream"):
                self._send(200, "text/event-stream", _stream(step, number))
            else:
                self._send(200, "application/json", json.dumps(_whole(step, number)).encode())

    return Handler


def serve(model: ScriptedModel) -> Iterator[ScriptedModel]:
    """Serve ``model`` on a free loopback port until the generator is closed."""
    yield from serve_on_loopback(model, _handler(model), "scripted-model")
