"""websearch through the real sidecar: offered once a provider is configured in the
sidecar's environment, and answered from the provider's MCP call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.http_server import Handler, LocalServer
from tests.wire.conftest import connect, make_project


async def test_the_sidecar_offers_and_runs_websearch_with_a_provider_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LocalServer()

    @server.route("/mcp")
    def search(handler: Handler) -> None:
        result = {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "hit"}]},
        }
        handler.reply(200, f"data: {json.dumps(result)}\n\n".encode(), "text/event-stream")

    server.start()
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENCODE_ENABLE_EXA", "1")
        monkeypatch.setenv("TOOLHOST_WEBSEARCH_URL", server.url("/mcp"))
        async with connect(make_project(tmp_path)) as client:
            listed = await client.call("tools/list", {})
            assert "websearch" in [tool["id"] for tool in listed["tools"]]
            result = await client.call(
                "tools/execute", {"tool": "websearch", "args": {"query": "toolhost"}}
            )
        assert result["output"] == "hit"
        assert result["title"] == "Exa Web Search: toolhost"
        assert json.loads(server.seen[0].body)["params"]["arguments"]["query"] == "toolhost"
    finally:
        server.stop()
