"""``edit`` of one spot in a 100 000-line file vs the floor: ``str.find`` and an atomic write.

Ours: the whole ``edit`` tool call in-process (``ToolHost.execute``): load and decode the
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
from pathlib import Path

from _common import Row, log, median, now

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


async def run(quick: bool) -> list[Row]:
    rounds = 5 if quick else 15
    with tempfile.TemporaryDirectory(prefix="bench-edit-") as tmp:
        root = Path(tmp)
        path = root / "big.py"
        make_file(path)
        host = ToolHost(root)
        session = "ses_edit_bench"
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
                await host.execute("read", {"filePath": str(path)}, session_id=session)
                start = now()
                result = await host.execute(
                    "edit",
                    {"filePath": str(path), "oldString": old, "newString": new},
                    session_id=session,
                )
                took = now() - start
                if result.is_error:
                    raise RuntimeError(f"edit failed: {result.output}")
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
                f"edit {label}: ours {[round(s * 1e3, 1) for s in ours]} ms, "
                f"floor {[round(s * 1e3, 1) for s in floor]} ms"
            )
            ratio = median(ours) / median(floor)
            rows.append(
                Row(
                    f"edit, {label}, 100k-line file",
                    median(ours),
                    median(floor),
                    f"≤ {target:g}x",
                    ratio <= target,
                    note=f"whole tool call in-process vs str.find + atomic write; "
                    f"median of {rounds}",
                )
            )
        host.close()
    return rows


if __name__ == "__main__":
    for row in asyncio.run(run(True)):
        print(row.cells())
