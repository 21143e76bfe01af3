"""(a) Spawn → ``initialize`` answered: ``toolhost serve`` vs a minimal pygls server.

Both are started the way an editor starts a sidecar (a fresh process on stdio,
``initialize`` written straight away) and timed until the initialize result
arrives. Runs are interleaved so drift (page cache, CPU frequency) hits both.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import (
    CALL_TIMEOUT,
    PYTHON,
    Row,
    RpcClient,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)

BASELINE = Path(__file__).with_name("baseline_pygls.py")
TARGET = 1.15
FIRST_TARGET = 1.1  # issue 29
LIST_TARGET = 0.150  # seconds, for `toolhost list` (issue 29)


async def spawn_once(
    argv: Sequence[str], root: Path, env: dict[str, str], first: tuple[str, dict[str, Any]]
) -> tuple[float, float]:
    """Seconds until ``initialize`` is answered, and until a first real request is."""
    start = now()
    client = await RpcClient.spawn(argv, cwd=root, env=env)
    try:
        await client.initialize(root)
        initialized = now() - start
        result = await client.request(*first, timeout=CALL_TIMEOUT)
        answered = now() - start
        if isinstance(result, dict) and result.get("isError"):
            raise RuntimeError(f"first request failed: {result.get('output')}")
    finally:
        await client.close()
    return initialized, answered


async def run(quick: bool) -> list[Row]:
    spawns = 5 if quick else 15
    ours: list[float] = []
    base: list[float] = []
    ours_first: list[float] = []
    base_first: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-spawn-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "tiny.txt").write_text("hello\n")
        env = server_env(Path(tmp))
        read = {"tool": "read", "args": {"filePath": str(root / "tiny.txt")}}
        sides = [
            (toolhost_argv(), ("tools/execute", read), ours, ours_first),
            ([PYTHON, str(BASELINE)], ("bench/echo", {}), base, base_first),
        ]
        # One unrecorded start each, so neither side pays for a cold .pyc/page cache.
        for argv, first, _, _ in sides:
            await spawn_once(argv, root, env, first)
        for i in range(spawns):
            # Alternate who goes first, so neither always follows the other.
            for argv, first, to_init, to_first in sides if i % 2 == 0 else sides[::-1]:
                initialized, answered = await spawn_once(argv, root, env, first)
                to_init.append(initialized)
                to_first.append(answered)
    ms = [[round(s * 1e3) for s in samples] for samples in (ours, base)]
    log(f"spawn: ours {ms[0]} ms, pygls {ms[1]} ms")
    ratio = median(ours) / median(base)
    return [
        Row(
            "spawn → initialize",
            median(ours),
            median(base),
            f"≤ {TARGET}x",
            ratio <= TARGET,
            note=f"median of {spawns} interleaved spawns each; baseline: bench/baseline_pygls.py",
        ),
        Row(
            "spawn → first tools/execute",
            median(ours_first),
            median(base_first),
            f"≤ {FIRST_TARGET}x",
            median(ours_first) <= FIRST_TARGET * median(base_first),
            note="same spawns, until a read of a 1-line file is answered (baseline: its echo "
            "method); toolhost loads its tools on `initialized`, so that cost shows here",
        ),
        await list_row(spawns),
    ]


async def list_row(runs: int) -> Row:
    """`toolhost list` as a person runs it, vs the interpreter starting and exiting."""
    import asyncio

    async def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
        start = now()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        if await proc.wait() != 0:
            raise RuntimeError(f"{argv} failed")
        return now() - start

    with tempfile.TemporaryDirectory(prefix="bench-list-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        env = server_env(Path(tmp))
        listing = [str(Path(toolhost_argv()[0])), "list"]
        bare = [PYTHON, "-c", "pass"]
        await timed(listing, root, env)  # fills the bytecode cache
        ours = [await timed(listing, root, env) for _ in range(runs)]
        base = [await timed(bare, root, env) for _ in range(runs)]
    return Row(
        "toolhost list",
        median(ours),
        median(base),
        f"≤ {LIST_TARGET * 1e3:.0f} ms",
        median(ours) <= LIST_TARGET,
        note=f"median of {runs}; baseline: the same Python starting and exiting (python -c pass)",
    )
