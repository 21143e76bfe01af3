"""What checkpoints (undo of a turn) cost: time added to a call, and storage per turn.

Time: the same call in-process (``ToolHost.execute``) on a worktree of 100 000 small
files, with the turn's checkpoint and without one (the same host with its turns
switched off), the two alternating call by call. For bash, the sandbox's capture
(seccomp user notification, ``tools/bash/sandbox/capture.py``) and the run folder;
for an edit, the copy of the file's old bytes. Targets are on the p95: a checkpoint
adds at most 20 ms to a bash call and 5 ms to an edit.

Storage: one turn that changes 10 small files (bash ``sed -i`` on 9, an ``edit`` of
one) in a 1 GiB worktree (256 MiB with ``--quick``): the turn's checkpoint folder,
target < 1 MB. Extra rows (information): the scans at a turn's edges that find
changes made outside toolhost, against ``rg --files`` alone, and the copies they keep.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Row, log, median, now, percentile

from tools import ToolHost
from tools.checkpoints import outside
from tools.permission.rules import rules_from_config

FILES = 100_000
BASH_ADDED = 0.020
EDIT_ADDED = 0.005
TURN_BYTES = 1_000_000


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 1000:03d}" / f"s{(i // 100) % 10}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"line a {i}\n" * 20)


# The benchmark repeats one call on purpose (see bench/README.md).
REPEATS = rules_from_config({"doom_loop": "allow"})


def host(root: Path) -> ToolHost:
    return ToolHost(root, read_before_write=False, permission_defaults=REPEATS)


def no_turns(host: ToolHost) -> ToolHost:
    """The same host with checkpoints switched off: every call outside any turn."""
    host.checkpoints.turn_for = lambda *args, **kwargs: None  # type: ignore[method-assign,assignment,return-value]
    return host


async def alternate(
    with_turn: ToolHost, without: ToolHost, calls: list[tuple[str, dict[str, Any]]], rounds: int
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    base: list[float] = []
    for i in range(rounds + 2):
        for host, samples in ((with_turn, ours), (without, base)):
            start = now()
            for tool, args in calls:
                result = await host.execute(tool, args, session_id=f"ses_{id(host)}")
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {result.output}")
            if i >= 2:  # warm-up
                samples.append(now() - start)
    return ours, base


def p95_row(name: str, ours: list[float], base: list[float], limit: float, note: str) -> Row:
    added = percentile(ours, 95) - percentile(base, 95)
    log(f"{name}: p95 {percentile(ours, 95) * 1e3:.1f} ms vs {percentile(base, 95) * 1e3:.1f} ms")
    return Row(
        name,
        percentile(ours, 95),
        percentile(base, 95),
        f"adds ≤ {limit * 1e3:g} ms (p95)",
        added <= limit,
        note=f"{note}; added {added * 1e3:.1f} ms at p95, "
        f"{(median(ours) - median(base)) * 1e3:.1f} ms at the median",
    )


async def call_cost(quick: bool) -> list[Row]:
    files = FILES // 5 if quick else FILES
    rounds = 20 if quick else 60
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-") as tmp:
        root = Path(tmp)
        log(f"checkpoint_cost: making {files} files")
        make_tree(root, files)
        with_turn = host(root)
        without = no_turns(host(root))
        target = root / "d000" / "s0" / "f0.txt"
        sed = [("bash", {"command": f"sed -i 's/a 0/b 0/;s/b 0/a 0/' {target}"})]
        ours, base = await alternate(with_turn, without, sed, rounds)
        rows = [p95_row("bash sed -i, checkpointed", ours, base, BASH_ADDED, f"{files} files")]
        ours, base = await alternate(with_turn, without, [("bash", {"command": "true"})], rounds)
        rows.append(p95_row("bash true, checkpointed", ours, base, BASH_ADDED, f"{files} files"))
        edit = []
        for i in range(2):
            edit.append(
                (
                    "edit",
                    {
                        "filePath": str(target),
                        "oldString": f"line {'ab'[i]} 0",
                        "newString": f"line {'ba'[i]} 0",
                        "replaceAll": True,
                    },
                )
            )
        ours, base = await alternate(with_turn, without, edit, rounds)
        ours, base = [s / 2 for s in ours], [s / 2 for s in base]
        rows.append(p95_row("edit, checkpointed", ours, base, EDIT_ADDED, f"{files} files"))
        rows += scan_rows(root, files)
        with_turn.close()
        without.close()
    return rows


def scan_rows(root: Path, files: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as store:
        baseline = outside.Baseline(Path(store))
        start = now()
        baseline.scan(root)
        first = now() - start
        start = now()
        baseline.scan(root)
        again = now() - start
        start = now()
        listed = outside.list_files(root)
        rg = now() - start
        kept = _size(Path(store))
    assert len(listed) >= files
    return [
        Row(
            "outside-change scan, first (copies)",
            first,
            rg,
            "info",
            None,
            note=f"{files} files, {kept / 1e6:.0f} MB of copies kept; baseline: rg --files",
        ),
        Row(
            "outside-change scan at a turn's edge",
            again,
            rg,
            "info",
            None,
            note="nothing changed since the last scan; off the calls' path (a worker thread)",
        ),
    ]


async def storage(quick: bool) -> list[Row]:
    size = (256 if quick else 1024) << 20
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        root = Path(tmp) / "wt"
        root.mkdir()
        chunk = os.urandom(8 << 20)
        for i in range(size // len(chunk)):
            (root / f"big{i}.bin").write_bytes(chunk)
        small = [root / f"small{i}.txt" for i in range(10)]
        for i, path in enumerate(small):
            path.write_text(f"small file {i}\n" * 40)
        host = ToolHost(root, read_before_write=False, permission_defaults=REPEATS)
        session = "ses_storage"
        start = time.perf_counter()
        command = " && ".join(f"sed -i s/small/SMALL/ {p.name}" for p in small[:9])
        result = await host.execute("bash", {"command": command}, session_id=session)
        assert not result.is_error, result.output
        result = await host.execute(
            "edit",
            {
                "filePath": str(small[9]),
                "oldString": "small",
                "newString": "SMALL",
                "replaceAll": True,
            },
            session_id=session,
        )
        assert not result.is_error, result.output
        host.checkpoints.end(session)
        took = time.perf_counter() - start
        (entry,) = host.checkpoints.entries(session)
        assert len(entry["files"]) == 10, entry
        used = _size(host.checkpoints.store / entry["id"])
        total = sum(p.stat().st_size for p in root.iterdir())
        host.close()
    log(f"storage: {used} bytes for the turn in a {total >> 20} MiB worktree ({took:.2f} s)")
    return [
        Row(
            f"storage of a 10-file turn, {total >> 20} MiB worktree",
            float(used),
            float(TURN_BYTES),
            "< 1 MB",
            used < TURN_BYTES,
            note=f"{used} bytes, against the 1 MB target",
            unit="B",
        )
    ]


def _size(folder: Path) -> int:
    found = subprocess.run(["du", "-sb", str(folder)], capture_output=True, text=True, check=True)
    return int(found.stdout.split()[0])


async def run(quick: bool) -> list[Row]:
    return [*await call_cost(quick), *await storage(quick)]


if __name__ == "__main__":
    for row in asyncio.run(run(True)):
        print(row.cells())
