"""(b) ``tools/execute`` round trip of a trivial call vs an asyncio JSON-RPC echo server.

The call is ``read`` of a one-line file: the smallest amount of real tool work
that still goes through validation, permissions, the session and the result
conversion. The baseline answers every request with its params, so the ratio is
what the whole stack (pygls + ToolHost + the tool) costs over bare framing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from _common import (
    CALL_TIMEOUT,
    PYTHON,
    Row,
    RpcClient,
    execute,
    fmt_time,
    log,
    median,
    now,
    percentile,
    server_env,
    toolhost_argv,
)

BASELINE = Path(__file__).with_name("baseline_echo.py")
# A real tool that touches no file (the session's todo list, in memory): what the
# stack costs per call before any I/O.
NO_IO = {"tool": "todoread", "args": {}}
BLOCKS = 10
TARGET = 2.0


async def measure(
    client: RpcClient, method: str, params: dict[str, Any], calls: int, warmup: int = 0
) -> list[float]:
    samples = []
    async with client.deadline(CALL_TIMEOUT + calls * 0.05, f"{calls} x {method}"):
        for _ in range(warmup):
            await client.request(method, params)
        for _ in range(calls):
            start = now()
            result = await client.request(method, params)
            samples.append(now() - start)
            if result.get("isError"):  # a fast error is not a round trip of the tool
                raise RuntimeError(f"{params['tool']} failed: {result.get('output')}")
    return samples


async def run(quick: bool) -> list[Row]:
    calls, warmup = (300, 50) if quick else (2000, 200)
    with tempfile.TemporaryDirectory(prefix="bench-roundtrip-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        tiny = root / "tiny.txt"
        tiny.write_text("hello\n")
        env = server_env(Path(tmp))
        params = {"tool": "read", "args": {"filePath": str(tiny)}}

        ours_client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=env)
        echo_client = await RpcClient.spawn([PYTHON, str(BASELINE)], cwd=root, env=env)
        try:
            for client in (ours_client, echo_client):
                await client.initialize(root)
            first = await execute(ours_client, "read", params["args"])
            assert "hello" in first["output"], first
            series: list[tuple[RpcClient, dict[str, Any], list[float]]] = [
                (ours_client, params, []),
                (ours_client, NO_IO, []),
                (echo_client, params, []),
            ]
            for client, call, _ in series:
                await measure(client, "tools/execute", call, warmup)
            # Both servers stay up and take turns in blocks, so machine drift hits all.
            for _ in range(BLOCKS):
                for client, call, samples in series:
                    samples += await measure(client, "tools/execute", call, calls // BLOCKS)
            ours, floor, base = (samples for _, _, samples in series)
        finally:
            await ours_client.close()
            await echo_client.close()

    ours_med, base_med = median(ours), median(base)
    ours_p99, base_p99 = percentile(ours, 99), percentile(base, 99)
    log(
        f"roundtrip: ours median {fmt_time(ours_med)} p99 {fmt_time(ours_p99)}; "
        f"echo median {fmt_time(base_med)} p99 {fmt_time(base_p99)}"
    )
    return [
        Row(
            "tools/execute read (median)",
            ours_med,
            base_med,
            f"≤ {TARGET:g}x",
            ours_med / base_med <= TARGET,
            note=f"{calls} sequential calls after {warmup} warm-up, in {BLOCKS} blocks "
            "alternating with the baseline: bench/baseline_echo.py",
        ),
        Row("tools/execute read (p99)", ours_p99, base_p99, "-", None),
        Row(
            "tools/execute todoread (median)",
            median(floor),
            base_med,
            "-",
            None,
            note="no I/O: what JSON-RPC, the server and ToolHost cost per call",
        ),
    ]
