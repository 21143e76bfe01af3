"""Two checkouts of toolhost, compared call by call on this machine, interleaved.

A change that saves 5% is invisible in ``run.py`` on a noisy VM: the same build's
spawn → first call moved between 1.22x and 1.34x from run to run. Here the two
builds take turns spawn by spawn (and block by block for the round trip), so drift
hits both, and each figure is a median of many.

    git worktree add /tmp/before HEAD~3
    .venv/bin/python bench/ab.py /tmp/before .         # spawn, first call, round trip
    .venv/bin/python bench/ab.py /tmp/before . --spawns 30 --calls 4000

Both run with this checkout's virtualenv (so the dependencies are the same); each
server imports ``server`` and ``tools`` from its own tree, which comes first on
``sys.path``. Not part of ``run.py``: it compares builds, not toolhost and a peer.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import PYTHON, RpcClient, log, now, server_env

# Runs one tree's sidecar as the console script would: its own server/ and tools/ first.
LAUNCH = (
    "import sys; tree = sys.argv.pop(1); sys.path.insert(0, tree); "
    "from server.cli import main; sys.argv = ['toolhost', 'serve']; sys.exit(main())"
)
BLOCKS = 10


def argv_for(tree: Path) -> list[str]:
    if not (tree / "server" / "cli.py").is_file():
        raise SystemExit(f"{tree} is not a toolhost checkout (no server/cli.py)")
    return [PYTHON, "-c", LAUNCH, str(tree.resolve())]


def read_args(root: Path) -> dict[str, Any]:
    return {"tool": "read", "args": {"filePath": str(root / "tiny.txt")}}


async def spawn_once(argv: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer, and from there to the first read."""
    start = now()
    client = await RpcClient.spawn(argv, cwd=root, env=env)
    try:
        await client.initialize(root)
        initialized = now()
        result = await client.request("tools/execute", read_args(root))
        if result.get("isError"):
            raise RuntimeError(f"the first read failed: {result.get('output')}")
        return initialized - start, now() - initialized
    finally:
        await client.close()


async def compare_spawns(
    argvs: dict[str, list[str]], root: Path, env: dict[str, str], spawns: int
) -> None:
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for argv in argvs.values():  # warm the bytecode caches
        await spawn_once(argv, root, env)
    for i in range(spawns):
        order = list(argvs.items()) if i % 2 == 0 else list(argvs.items())[::-1]
        for name, argv in order:
            times[name].append(await spawn_once(argv, root, env))
    for name, pairs in times.items():
        init = statistics.median(p[0] for p in pairs) * 1e3
        first = statistics.median(p[1] for p in pairs) * 1e3
        print(f"{name}: spawn → initialize {init:.0f} ms, then first read {first:.1f} ms")


async def compare_round_trips(
    argvs: dict[str, list[str]], root: Path, env: dict[str, str], calls: int
) -> None:
    clients = {name: await RpcClient.spawn(argv, cwd=root, env=env) for name, argv in argvs.items()}
    try:
        for client in clients.values():
            await client.initialize(root)
        for params in (read_args(root), {"tool": "todoread", "args": {}}):
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for client in clients.values():  # warm up
                for _ in range(200):
                    await client.request("tools/execute", params)
            for _ in range(BLOCKS):
                for name, client in clients.items():
                    for _ in range(calls // BLOCKS):
                        start = now()
                        result = await client.request("tools/execute", params)
                        samples[name].append(now() - start)
                        if result.get("isError"):
                            raise RuntimeError(f"{params['tool']}: {result.get('output')}")
            medians = ", ".join(
                f"{name} {statistics.median(times) * 1e6:.0f} µs" for name, times in samples.items()
            )
            print(f"{params['tool']} round trip (median of {calls}): {medians}")
    finally:
        for client in clients.values():
            await client.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="a toolhost checkout (the baseline)")
    parser.add_argument("b", type=Path, help="another toolhost checkout (the change)")
    parser.add_argument("--spawns", type=int, default=20, help="spawns of each (default 20)")
    parser.add_argument("--calls", type=int, default=2000, help="round trips of each")
    args = parser.parse_args()
    argvs = {"a": argv_for(args.a), "b": argv_for(args.b)}
    log(f"a = {args.a.resolve()}, b = {args.b.resolve()}")
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "tiny.txt").write_text("hello\n")
        env = server_env(Path(tmp))
        await compare_spawns(argvs, root, env, args.spawns)
        await compare_round_trips(argvs, root, env, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
