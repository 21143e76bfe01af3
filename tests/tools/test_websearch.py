"""websearch against a scripted search provider on 127.0.0.1 (OpenCode 1.18.33's tool).

The provider speaks what Exa's and Parallel's MCP endpoints speak: one JSON-RPC
``tools/call`` POSTed over HTTP, answered as JSON or as server-sent events.
``TOOLHOST_WEBSEARCH_URL`` points the tool at the scripted one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.http_server import Handler, LocalServer
from tools.builtin.lazy import builtin_tools
from tools.builtin.websearch import MAX_RESPONSE_BYTES, NO_RESULTS, NOT_CONFIGURED
from tools.config.effective import Config
from tools.host import ToolHost
from tools.permission.rules import rules_from_config

SWITCHES = (
    "OPENCODE_WEBSEARCH_PROVIDER",
    "OPENCODE_ENABLE_EXA",
    "OPENCODE_EXPERIMENTAL_EXA",
    "OPENCODE_EXPERIMENTAL",
    "OPENCODE_ENABLE_PARALLEL",
    "OPENCODE_EXPERIMENTAL_PARALLEL",
    "EXA_API_KEY",
    "PARALLEL_API_KEY",
    "TOOLHOST_WEBSEARCH_URL",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*SWITCHES, "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    local = LocalServer().start()
    monkeypatch.setenv("TOOLHOST_WEBSEARCH_URL", local.url("/mcp"))
    yield local
    local.stop()


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    return ToolHost(worktree, tools=builtin_tools())


def mcp_result(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}


def answer_sse(text: str):
    def route(handler: Handler) -> None:
        event = f"event: message\ndata: {json.dumps(mcp_result(text))}\n\n".encode()
        handler.reply(200, event, "text/event-stream")

    return route


def answer_json(payload: dict[str, Any], status: int = 200):
    def route(handler: Handler) -> None:
        handler.reply(status, json.dumps(payload).encode(), "application/json")

    return route


def sent(server: LocalServer) -> dict[str, Any]:
    (seen,) = server.seen
    assert seen.method == "POST"
    body: dict[str, Any] = json.loads(seen.body)
    return body


def offered(host: ToolHost) -> list[str]:
    return [tool.id for tool in host.offered()]


def test_offered_only_when_a_provider_is_configured(
    host: ToolHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "websearch" not in offered(host)
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    listed = {tool.id: tool for tool in host.offered()}
    ids = list(listed)
    assert ids.index("todoread") < ids.index("websearch") < ids.index("skill")
    description = listed["websearch"].description
    assert f"The current year is {date.today().year}." in description
    assert "{{year}}" not in description


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({"OPENCODE_ENABLE_EXA": "true"}, "exa"),
        ({"OPENCODE_EXPERIMENTAL": "1"}, "exa"),
        ({"OPENCODE_ENABLE_PARALLEL": "1"}, "parallel"),
        ({"OPENCODE_ENABLE_EXA": "1", "OPENCODE_ENABLE_PARALLEL": "1"}, "parallel"),
        ({"OPENCODE_ENABLE_PARALLEL": "1", "OPENCODE_WEBSEARCH_PROVIDER": "exa"}, "exa"),
        ({"OPENCODE_WEBSEARCH_PROVIDER": "parallel"}, "parallel"),
    ],
)
async def test_the_provider_follows_opencodes_switches(
    server: LocalServer,
    run: Runner,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    provider: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server.routes["/mcp"] = answer_sse("found")
    result = await run("websearch", {"query": "q"})
    assert result.metadata["provider"] == provider
    assert sent(server)["params"]["name"] == (
        "web_search_exa" if provider == "exa" else "web_search"
    )


async def test_an_exa_search_sends_1_18_33s_call_and_reads_the_event_stream(
    server: LocalServer, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    monkeypatch.setenv("EXA_API_KEY", "k&1")
    server.routes["/mcp"] = answer_sse("Title: toolhost\nURL: https://example.test\n")
    result = await run("websearch", {"query": "toolhost sidecar", "numResults": 3})
    assert not result.is_error
    assert result.output == "Title: toolhost\nURL: https://example.test\n"
    assert result.title == "Exa Web Search: toolhost sidecar"
    assert result.metadata["provider"] == "exa"
    assert sent(server) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "web_search_exa",
            "arguments": {
                "query": "toolhost sidecar",
                "type": "auto",
                "numResults": 3,
                "livecrawl": "fallback",
            },
        },
    }
    (seen,) = server.seen
    assert seen.query == "exaApiKey=k%261"
    assert seen.headers["accept"] == "application/json, text/event-stream"


async def test_a_parallel_search_names_the_session_and_sends_the_key(
    server: LocalServer, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_PARALLEL", "1")
    monkeypatch.setenv("PARALLEL_API_KEY", "secret")
    server.routes["/mcp"] = answer_json(mcp_result("parallel results"))
    result = await run("websearch", {"query": "rust 2026"})
    assert result.output == "parallel results"
    assert result.title == "Parallel Web Search: rust 2026"
    assert sent(server)["params"]["arguments"] == {
        "objective": "rust 2026",
        "search_queries": ["rust 2026"],
        "session_id": run.session_id,
    }
    assert server.seen[0].headers["authorization"] == "Bearer secret"


async def test_no_text_in_the_answer_says_there_were_no_results(
    server: LocalServer, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    server.routes["/mcp"] = answer_json({"jsonrpc": "2.0", "id": 1, "result": {"content": []}})
    result = await run("websearch", {"query": "nothing"})
    assert not result.is_error
    assert result.output == NO_RESULTS


async def test_the_ask_names_the_query_and_a_rejection_searches_nothing(
    server: LocalServer, run: Runner, editor: RecordingEditor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    run.host.set_config(Config(rules=rules_from_config({"websearch": "ask"})))
    editor.reply = "reject"
    server.routes["/mcp"] = answer_sse("never")
    result = await run("websearch", {"query": "secret plans", "type": "deep"})
    assert result.metadata["error"] == "permission_rejected"
    assert server.seen == []
    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always) == ("websearch", ["secret plans"], ["*"])
    assert ask.metadata["type"] == "deep"
    assert ask.metadata["provider"] == "exa"


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "API key is missing or not accepted"), (429, "rate limiting"), (502, "HTTP 502")],
)
async def test_a_refusal_says_why(
    server: LocalServer, run: Runner, monkeypatch: pytest.MonkeyPatch, status: int, words: str
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    server.routes["/mcp"] = answer_json({"error": "no"}, status)
    result = await run("websearch", {"query": "q"})
    assert result.is_error
    assert words in result.output


async def test_an_answer_past_the_cap_is_refused_not_kept(
    server: LocalServer, run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    server.routes["/mcp"] = answer_sse("x" * (MAX_RESPONSE_BYTES + 1))
    result = await run("websearch", {"query": "q"})
    assert result.is_error
    assert "more than 256 KiB" in result.output


async def test_a_provider_that_cannot_be_reached_says_so(
    run: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
    monkeypatch.setenv("TOOLHOST_WEBSEARCH_URL", "http://127.0.0.1:9/mcp")  # discard: refused
    result = await run("websearch", {"query": "q"})
    assert result.is_error
    assert result.output.startswith("Could not reach Exa Web Search")


async def test_a_call_with_no_provider_configured_says_how_to_configure_one(run: Runner) -> None:
    result = await run("websearch", {"query": "q"})
    assert result.is_error
    assert result.output == NOT_CONFIGURED
