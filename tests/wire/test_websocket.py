"""`toolhost serve --ws`: the same protocol over a WebSocket, one JSON message per frame."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.wire.conftest import TOOLHOST, make_project, server_env


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


async def test_serve_over_websocket(root: Path, tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "serve",
        "--ws",
        "127.0.0.1:0",
        stderr=asyncio.subprocess.PIPE,
        cwd=root,
        env=server_env(tmp_path / "data"),
    )
    ids = itertools.count(1)
    try:
        assert proc.stderr is not None
        found = None
        while found is None:
            line = await asyncio.wait_for(proc.stderr.readline(), 20)
            assert line, "the server ended before listening"
            found = re.search(rb"listening on 127\.0\.0\.1:(\d+)", line)
        async with connect(f"ws://127.0.0.1:{int(found.group(1))}") as ws:

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
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
