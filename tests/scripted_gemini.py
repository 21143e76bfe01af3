"""The scripted model of ``tests/scripted_model.py``, speaking Google's Gemini API.

Gemini CLI talks to ``$GOOGLE_GEMINI_BASE_URL`` with ``GEMINI_API_KEY``:
``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` (server-sent events, one
``GenerateContentResponse`` a chunk) and ``:generateContent`` (one JSON answer), plus
``:countTokens``.  A request that declares functions is a turn of the conversation and
takes the next step (a ``functionCall`` part, or text); any other (Gemini CLI's own
checks between turns) gets a short text, or, where it asks for JSON of a schema (its
model router's complexity score), the smallest object of that schema.  The steps, the
recorded requests and ``ScriptedModel`` itself are the chat model's; only the wire differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scripted_model import Reply, ScriptedHandler, ScriptedModel, ToolCall, serve_on_loopback


@dataclass
class ScriptedGemini(ScriptedModel):
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def is_turn(self, body: dict[str, Any]) -> bool:
        return bool(declared_functions(body))


def declared_functions(body: dict[str, Any]) -> list[str]:
    """The names of the functions a request offers the model."""
    return [
        str(declaration.get("name"))
        for tool in body.get("tools") or []
        for declaration in tool.get("functionDeclarations") or []
    ]


def function_responses(body: dict[str, Any]) -> list[str]:
    """Each ``functionResponse`` a request carries, as JSON text."""
    return [
        json.dumps(part["functionResponse"].get("response"))
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if "functionResponse" in part
    ]


def _answer(step: ToolCall | Reply) -> dict[str, Any]:
    if isinstance(step, Reply):
        part: dict[str, Any] = {"text": step.text}
    else:
        part = {"functionCall": {"name": step.name, "args": step.arguments}}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "scripted",
    }


def _smallest(schema: dict[str, Any]) -> Any:
    """The smallest value of a (Gemini-flavoured, upper-case) JSON Schema."""
    kind = str(schema.get("type", "OBJECT")).upper()
    if kind == "OBJECT":
        properties = schema.get("properties") or {}
        return {name: _smallest(properties[name]) for name in schema.get("required") or []}
    if "enum" in schema:
        return schema["enum"][0]
    return {"STRING": "scripted", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False}.get(kind, [])


def _handler(model: ScriptedGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            body = self._json_body()
            if body is None:
                return
            if ":countTokens" in self.path:
                self._send(200, "application/json", b'{"totalTokens": 10}')
                return
            schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
            if schema and not model.is_turn(body):
                with model._lock:
                    model.other_requests.append(body)
                step: ToolCall | Reply = Reply(json.dumps(_smallest(schema)))
            else:
                step = model.next_step(body)
            answer = json.dumps(_answer(step))
            if ":streamGenerateContent" in self.path:
                self._send(200, "text/event-stream", f"data: {answer}\r\n\r\n".encode())
            else:
                self._send(200, "application/json", answer.encode())

    return Handler


def serve_gemini(model: ScriptedGemini) -> Iterator[ScriptedGemini]:
    """Serve ``model`` on a free loopback port until the generator is closed."""
    yield from serve_on_loopback(model, _handler(model), "scripted-gemini")
