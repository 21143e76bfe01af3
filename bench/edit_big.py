"""``edit`` of one spot in a 100 000-line file vs the floor: ``str.find`` and an atomic write.

Ours, twice: in-process (``ToolHost.execute``), and over the wire (``tools/execute`` to a
``toolhost serve``, the result and its metadata encoded, sent and decoded, as an editor
waits for it). The tool call: load and decode the
file, find the match (the nine replacers), describe the change (unified diff, LSP edit),
ask, write atomically, stamp the read. The floor does the least any correct tool must:
read the file, decode it, ``str.find`` the old text, splice, encode, and write it the way
ours does (temp file, fsync, rename, fsync of the folder). Both alternate, same file.

Two cases: an exact ``oldString``, and one whose indentation and inner spacing differ from
the file's, so only the whitespace-normalised replacer finds it (the floor then searches
the file's own text, which it could not know without normalising: it stays the floor).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import CALL_TIMEOUT, Row, RpcClient, log, median, now, server_env, toolhost_argv

from tools import ToolHost
from tools.fsio import atomic_write

LINES = 100_000
TARGET_EXACT = 3.0
TARGET_NORMALISED = 5.0


def make_file(path: Path) -> None:
    lines = []
    for i in range(LINES):
        if i % 50 == 0:
            lines.append(f"def function_{i}(value, other):")
        else:
            lines.append(f"    result_{i} = compute(value, {i}) + other  # step {i}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def floor_edit(path: Path, old: str, new: str) -> None:
    text = path.read_bytes().decode("utf-8")
    at = text.find(old)
    if at < 0:
        raise RuntimeError("floor: not found")
    atomic_write(path, (text[:at] + new + text[at + len(old) :]).encode("utf-8"))


Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


async def run(quick: bool) -> list[Row]:
    rounds = 5 if quick else 15
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-edit-") as tmp:
        scratch = Path(tmp).resolve()
        root = scratch / "project"
        root.mkdir()
        path = root / "big.py"
        make_file(path)
        host = ToolHost(root)
        session = "ses_edit_bench"

        async def in_process(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await host.execute(tool, args, session_id=session)
            return result.to_wire()

        client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=server_env(scratch))
        try:
            await client.initialize(root)

            async def over_the_wire(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                result: dict[str, Any] = await client.request(
                    "tools/execute", {"tool": tool, "args": args}, timeout=CALL_TIMEOUT
                )
                return result

            for where, call in (("in-process", in_process), ("over the wire", over_the_wire)):
                rows += await measure(where, call, path, rounds)
        finally:
            await client.close()
            host.close()
    return rows


async def measure(where: str, call: Call, path: Path, rounds: int) -> list[Row]:
    middle = LINES // 2 + 7
    exact_old = f"    result_{middle} = compute(value, {middle}) + other  # step {middle}"
    # Different indentation and spacing: only the whitespace-normalised replacer matches.
    loose_old = f"  result_{middle}  =  compute(value,  {middle}) + other  # step {middle}"
    rows: list[Row] = []
    for label, old, target in (
        ("exact", exact_old, TARGET_EXACT),
        ("whitespace-normalised", loose_old, TARGET_NORMALISED),
    ):
        ours: list[float] = []
        floor: list[float] = []
        for i in range(rounds + 1):
            new = f"    result_{middle} = changed_{i}(value)"
            await call("read", {"filePath": str(path)})
            start = now()
            result = await call("edit", {"filePath": str(path), "oldString": old, "newString": new})
            took = now() - start
            if result.get("isError"):
                raise RuntimeError(f"edit failed: {result['output']}")
            if f"changed_{i}(value)" not in path.read_text():
                raise RuntimeError("edit did not change the file")
            # Back to the original line for the next round, then the floor's turn.
            restore = path.read_text().replace(new, exact_old, 1)
            path.write_text(restore)
            start = now()
            floor_edit(path, exact_old, new)
            floor_took = now() - start
            path.write_text(restore)
            os.utime(path)
            if i:  # the first round warms the caches
                ours.append(took)
                floor.append(floor_took)
        log(
            f"edit {label}, {where}: ours {[round(s * 1e3, 1) for s in ours]} ms, "
            f"floor {[round(s * 1e3, 1) for s in floor]} ms"
        )
        ratio = median(ours) / median(floor)
        how = (
            "the whole tool call in-process"
            if where == "in-process"
            else "tools/execute to a toolhost serve and back, result and metadata included"
        )
        rows.append(
            Row(
                f"edit, {label}, 100k-line file, {where}",
                median(ours),
                median(floor),
                f"≤ {target:g}x",
                ratio <= target,
                note=f"{how}, vs str.find + atomic write; median of {rounds}",
            )
        )
    return rows


if __name__ == "__main__":
    for row in asyncio.run(run(True)):
        print(row.cells())
