"""What the kernel sandbox adds to a bash call: the same call with and without it.

Three sidecars on the same project (a git repository, so its protected paths are
re-bound read-only), started the same way and initialized alike but for
``sandbox``: ``mode: off``, the default (Landlock plus a user and mount
namespace), and ``network: deny`` (a network namespace too). Each runs ``bash``
with ``true`` through ``tools/execute``; the three take turns in blocks, so drift
on the machine hits all of them. Every sandboxed result is checked to have been
sandboxed (``metadata.sandbox``), the off one not. Target from issue 11: at most
15 ms added per call.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

from _common import (
    CALL_TIMEOUT,
    Row,
    RpcClient,
    execute,
    fmt_time,
    initialize_params,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)

TARGET_MS = 15.0
BLOCKS = 10
SETUPS: dict[str, dict[str, Any]] = {
    "off": {"mode": "off"},
    "sandboxed": {},
    "network deny": {"network": "deny"},
}


async def start(root: Path, scratch: Path, sandbox: dict[str, Any]) -> RpcClient:
    client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=server_env(scratch))
    params = initialize_params(root)
    params["initializationOptions"]["config"]["sandbox"] = sandbox
    await client.request("initialize", params, timeout=CALL_TIMEOUT)
    await client.notify("initialized", {})
    return client


async def call(client: RpcClient, expect: str) -> float:
    start_time = now()
    result = await execute(client, "bash", {"command": "true", "description": "Run true"})
    took = now() - start_time
    sandbox = result["metadata"]["sandbox"]
    assert result["metadata"]["exit"] == 0, result
    assert sandbox["engine"] == expect, sandbox
    return took


async def run(quick: bool) -> list[Row]:
    calls = 60 if quick else 300
    samples: dict[str, list[float]] = {name: [] for name in SETUPS}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        clients = {name: await start(root, Path(tmp), s) for name, s in SETUPS.items()}
        try:
            engines = {"off": "none", "sandboxed": "landlock", "network deny": "landlock"}
            for name, client in clients.items():  # warm-up: the supervisor, the caches
                for _ in range(10):
                    await call(client, engines[name])
            for _ in range(BLOCKS):
                for name, client in clients.items():
                    for _ in range(calls // BLOCKS):
                        samples[name].append(await call(client, engines[name]))
        finally:
            for client in clients.values():
                await client.close()
    off = median(samples["off"])
    rows = []
    for name in ("sandboxed", "network deny"):
        ours = median(samples[name])
        added = ours - off
        log(f"sandbox cost: {name} {fmt_time(ours)}, off {fmt_time(off)}")
        rows.append(
            Row(
                f"bash `true`, {name}",
                ours,
                off,
                f"adds ≤ {TARGET_MS:g} ms",
                added * 1000 <= TARGET_MS,
                note=f"median of {calls}; adds {fmt_time(added)} to the same call with "
                "sandbox.mode off, same run",
            )
        )
    return rows
