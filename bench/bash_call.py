"""bash round trip of ``true`` through the sidecar vs starting ``/bin/true`` directly.

The difference is what the bash tool adds to a command: JSON-RPC, parsing the line
with tree-sitter, the permission check, the shell itself and the process-group
bookkeeping. The target from the issue is "a few milliseconds".
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from _common import (
    Row,
    RpcClient,
    execute,
    fmt_time,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)

TARGET_MS = 5.0
BLOCKS = 5


async def direct_true() -> float:
    start = now()
    proc = await asyncio.create_subprocess_exec("/bin/true")
    await proc.wait()
    return now() - start


async def run(quick: bool) -> list[Row]:
    calls = 50 if quick else 200
    args = {"command": "true", "description": "Run true"}
    with tempfile.TemporaryDirectory(prefix="bench-bash-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=server_env(Path(tmp)))
        ours: list[float] = []
        base: list[float] = []
        try:
            await client.initialize(root)
            for _ in range(10):  # warm-up: tree-sitter, the shell, the page cache
                await execute(client, "bash", args)
                await direct_true()
            for _ in range(BLOCKS):  # alternate, so drift on the machine hits both
                for _ in range(calls // BLOCKS):
                    start = now()
                    result = await execute(client, "bash", args)
                    ours.append(now() - start)
                    assert result["metadata"]["exit"] == 0, result
                for _ in range(calls // BLOCKS):
                    base.append(await direct_true())
        finally:
            await client.close()
    ours_med, base_med = median(ours), median(base)
    overhead = ours_med - base_med
    log(f"bash: ours {fmt_time(ours_med)}, /bin/true {fmt_time(base_med)}")
    return [
        Row(
            "bash `true` round trip",
            ours_med,
            base_med,
            f"overhead ≤ {TARGET_MS:g} ms",
            overhead * 1000 <= TARGET_MS,
            note=f"median of {calls}; overhead {fmt_time(overhead)}; baseline: "
            "asyncio.create_subprocess_exec('/bin/true') from the bench process",
        ),
    ]
