"""The scripted model of ``tests/scripted_model.py``, speaking OpenAI's Responses API.

Codex talks to a custom provider only with ``wire_api = "responses"`` (it refuses
``"chat"``), so this serves ``POST /v1/responses`` as server-sent events: per turn
``response.created``, one ``response.output_item.done`` (a ``function_call`` or an
assistant ``message``) and ``response.completed``, which is all Codex needs to end a
model step.  The steps, the recorded requests and ``ScriptedModel`` itself are the
chat model's; only the wire differs.

Codex offers an MCP server's tools as a ``namespace`` tool (``mcp__toolhost``
holding ``read``, ``edit``, ...).  A ``ToolCall`` names such a tool flat, the way
Codex's hooks do (``"mcp__toolhost__read"``), and is sent back as namespace
``mcp__toolhost`` plus name ``read``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scripted_model import Reply, ScriptedHandler, ScriptedModel, ToolCall, serve_on_loopback

NAMESPACE_SEPARATOR = "__"


def offered_tools(body: dict[str, Any]) -> list[str]:
    """The tools a Responses request offers, namespaced ones flattened (``mcp__toolhost__read``)."""
    names = []
    for tool in body.get("tools", []):
        if tool.get("type") == "namespace":
            names += [
                f"{tool['name']}{NAMESPACE_SEPARATOR}{inner['name']}" for inner in tool["tools"]
            ]
        elif "name" in tool:
            names.append(tool["name"])
    return names


def function_outputs(body: dict[str, Any]) -> list[str]:
    """The text of each ``function_call_output`` item a Responses request carries."""
    found = []
    for item in body.get("input", []):
        if item.get("type") != "function_call_output":
            continue
        output = item.get("output")
        if isinstance(output, list):
            output = "".join(str(part.get("text", "")) for part in output)
        found.append(str(output))
    return found


def _item(step: ToolCall | Reply, number: int) -> dict[str, Any]:
    if isinstance(step, Reply):
        return {
            "type": "message",
            "id": f"msg_scripted_{number}",
            "role": "assistant",
            "content": [{"type": "output_text", "text": step.text}],
        }
    namespace, separator, name = step.name.rpartition(NAMESPACE_SEPARATOR)
    item: dict[str, Any] = {
        "type": "function_call",
        "id": f"fc_scripted_{number}",
        "call_id": f"call_scripted_{number}",
        "name": name if separator else step.name,
        "arguments": json.dumps(step.arguments),
    }
    if separator:
        item["namespace"] = namespace
    return item


def _events(step: ToolCall | Reply, number: int) -> bytes:
    response_id = f"resp_scripted_{number}"
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    events = [
        {"type": "response.created", "response": {"id": response_id}},
        {"type": "response.output_item.done", "item": _item(step, number)},
        {"type": "response.completed", "response": {"id": response_id, "usage": usage}},
    ]
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    calls = iter(range(1, 1_000_000))

    class Handler(ScriptedHandler):
        def do_GET(self) -> None:  # /v1/models, should a client probe it
            self._send(404, "application/json", b'{"error": "no model list here"}')

        def do_POST(self) -> None:
            body = self._json_body()
            if body is None:
                return
            if not self.path.rstrip("/").endswith("/responses"):
                self._send(404, "application/json", b'{"error": "only /v1/responses"}')
                return
            step = model.next_step(body)
            self._send(200, "text/event-stream", _events(step, next(calls)))

    return Handler


def serve_responses(model: ScriptedModel) -> Iterator[ScriptedModel]:
    """Serve ``model`` over the Responses API on a free loopback port until closed."""
    yield from serve_on_loopback(model, _handler(model), "scripted-responses")
