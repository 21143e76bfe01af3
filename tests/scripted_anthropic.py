"""A scripted Anthropic Messages API on 127.0.0.1, for driving Claude Code (stdlib only).

The Anthropic-shaped sibling of ``tests/scripted_model.py`` (and its ``ToolCall`` /
``Reply`` steps).  ``POST /v1/messages`` is answered from the script, streamed as the
API streams it (``message_start``, ``content_block_start`` / ``_delta`` / ``_stop``
with text in ``text_delta`` pieces and a tool's input in ``input_json_delta`` pieces,
``message_delta`` with the stop reason, ``message_stop``), or as one JSON message when
the request does not ask to stream.  A request that offers ``marker_tool`` is a turn
of the conversation and takes the next step; any other (an agent's title or topic
calls) gets a short text and uses up no step.  Every request body is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scripted_model import (
    Reply,
    ScriptedHandler,
    ScriptedModel,
    ToolCall,
    serve_on_loopback,
)


@dataclass
class ScriptedAnthropic(ScriptedModel):
    marker_tool: str = ""  # a request offering this tool is a conversation turn
    aside = "Scripted aside"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def is_turn(self, body: dict[str, Any]) -> bool:
        return self.marker_tool in tool_names(body)


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(tool.get("name")) for tool in body.get("tools") or []]


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every ``tool_result`` block a request's user messages carry."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            if isinstance(inner, list):
                inner = "".join(part.get("text", "") for part in inner)
            found.append(str(inner))
    return found


def _content(step: ToolCall | Reply, number: int) -> tuple[dict[str, Any], str]:
    if isinstance(step, Reply):
        return {"type": "text", "text": step.text}, "end_turn"
    block = {"type": "tool_use", "id": f"toolu_scripted_{number}", "name": step.name}
    return {**block, "input": step.arguments}, "tool_use"


def _message(model: str, content: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()


def _pieces(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _stream(step: ToolCall | Reply, number: int, model: str) -> bytes:
    block, stop = _content(step, number)
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
    else:
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments)]
    out = _event("message_start", {"message": _message(model, [], None)})
    out += _event("content_block_start", {"index": 0, "content_block": start})
    for delta in deltas:
        out += _event("content_block_delta", {"index": 0, "delta": delta})
    out += _event("content_block_stop", {"index": 0})
    out += _event(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
    )
    return out + _event("message_stop", {})


def _handler(model: ScriptedAnthropic) -> type[BaseHTTPRequestHandler]:
    numbers = iter(range(1, 1_000_000))

    class Handler(ScriptedHandler):
        def do_GET(self) -> None:
            self._send(200, "application/json", b'{"data": [], "has_more": false}')

        def do_POST(self) -> None:
            body = self._json_body(not_json=b'{"type": "error"}')
            if body is None:
                return
            if "/count_tokens" in self.path:
                self._send(200, "application/json", b'{"input_tokens": 10}')
                return
            step = model.next_step(body)
            number = next(numbers)
            name = str(body.get("model") or "scripted")
            if body.get("stream"):
                self._send(200, "text/event-stream", _stream(step, number, name))
                return
            block, stop = _content(step, number)
            message = json.dumps(_message(name, [block], stop)).encode()
            self._send(200, "application/json", message)

    return Handler


def serve(model: ScriptedAnthropic) -> Iterator[ScriptedAnthropic]:
    """Serve ``model`` on a free loopback port until the generator is closed."""
    yield from serve_on_loopback(model, _handler(model), "scripted-claude")
