"""`toolhost serve --ws`: the same protocol over a WebSocket, one JSON message per frame."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.wire.conftest import attach_token, listening, make_project


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


async def test_serve_over_websocket(root: Path, tmp_path: Path) -> None:
    ids = itertools.count(1)
    async with listening("--ws", root, tmp_path / "data") as (proc, port):
        headers = {"Authorization": f"Bearer {attach_token(proc.pid)}"}
        async with connect(f"ws://127.0.0.1:{port}", additional_headers=headers) as ws:

            async def request(method: str, params: Any) -> Any:
                msg_id = next(ids)
                await ws.send(
                    json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
                )
                while True:  # skip notifications (logMessage and the like)
                    message = json.loads(await asyncio.wait_for(ws.recv(), 20))
                    if message.get("id") == msg_id:
                        return message

            init = await request("initialize", {"capabilities": {}, "rootUri": root.as_uri()})
            assert init["result"]["capabilities"]["experimental"]["toolhost"] == {"protocol": 1}
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            result = await request(
                "tools/execute", {"tool": "read", "args": {"filePath": "notes.txt"}}
            )
            assert "alpha" in result["result"]["output"]
            await request("shutdown", None)
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "exit"}))
        assert await asyncio.wait_for(proc.wait(), 20) == 0
