"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib only).

``ScriptedModel`` answers ``POST /v1/chat/completions`` with the next ``Turn`` of
its script, streamed as server-sent events the way OpenAI's API streams them (text
in several deltas, each tool call's arguments in pieces), and records every request
body it got, so a test can check what the sub-agent really sent.  A turn may also
``hold`` the stream open after its first chunk until the client goes away (for
cancel tests), or fail with an HTTP status.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    name: str
    arguments: dict[str, Any] | str
    id: str = ""


@dataclass
class Turn:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    hold: bool = False  # stream one chunk, then wait for the client to hang up
    status: int = 200  # an error status answers with OpenAI's error body
    error: str = ""


Script = list[Turn] | Callable[[dict[str, Any]], Turn]


class ScriptedModel:
    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hung_up = threading.Event()  # a held stream's client went away
        self.holding = threading.Event()  # a held stream is open
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.model = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def provider(self, *models: str, api_key: str | None = "test-key") -> dict[str, Any]:
        """OpenCode's provider entry for this server."""
        options: dict[str, Any] = {"baseURL": self.base_url}
        if api_key is not None:
            options["apiKey"] = api_key
        return {"options": options, "models": {m: {"name": m} for m in models or ("scripted",)}}

    def next_turn(self, body: dict[str, Any]) -> Turn:
        if callable(self.script):
            return self.script(body)
        if not self.script:
            return Turn(status=500, error="the script has no more turns")
        return self.script.pop(0)

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model: ScriptedModel = self.server.model  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        model.requests.append(body)
        model.headers.append({k.lower(): v for k, v in self.headers.items()})
        self.close_connection = True
        if self.path != "/v1/chat/completions":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        turn = model.next_turn(body)
        if turn.status != 200:
            return self._json(turn.status, {"error": {"message": turn.error, "type": "test"}})
        if not body.get("stream"):
            return self._json(200, _whole(turn))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for chunk in _chunks(turn):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
                if turn.hold:
                    return self._hold(model)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            model.hung_up.set()

    def _hold(self, model: ScriptedModel) -> None:
        model.holding.set()
        deadline = time.monotonic() + 30
        with contextlib.suppress(OSError):
            self.connection.settimeout(0.05)
            while time.monotonic() < deadline:
                try:
                    if self.connection.recv(1) == b"":
                        break  # the client closed the connection
                except TimeoutError:
                    continue
        model.hung_up.set()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _arguments(call: Call) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _whole(turn: Turn) -> dict[str, Any]:
    """A non-streaming completion (``stream`` not set)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for index, call in enumerate(turn.calls)
        ]
    finish = "tool_calls" if turn.calls else "stop"
    return {
        "id": "chatcmpl-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def _chunks(turn: Turn) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    text = turn.text
    for start in range(0, len(text), 7):
        yield chunk({"content": text[start : start + 7]})
    for index, call in enumerate(turn.calls):
        arguments = (
            call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        )
        call_id = call.id or f"call_{index}_{abs(hash(arguments)) % 10**8}"
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for start in range(0, len(arguments), 5):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 5]}}
            yield chunk({"tool_calls": [piece]})
    yield chunk({}, "tool_calls" if turn.calls else "stop")


def main() -> None:
    """``python -m tests.openai_server SCRIPT.json``: serve the turns of SCRIPT.json
    (``[{"text": …, "calls": [{"name", "arguments"}]}]``), print the base URL, log
    each request body to SCRIPT.json.requests, and stop when stdin closes."""
    import sys
    from pathlib import Path

    script_file = Path(sys.argv[1])
    turns = [
        Turn(
            text=t.get("text", ""),
            calls=[Call(c["name"], c["arguments"]) for c in t.get("calls", [])],
        )
        for t in json.loads(script_file.read_text())
    ]
    with ScriptedModel(turns) as model:
        print(model.base_url, flush=True)
        sys.stdin.read()
        script_file.with_suffix(".requests").write_text(json.dumps(model.requests))


if __name__ == "__main__":
    main()
