"""(d) ``read`` of the first 2000 lines: a 1 GB file vs a 1 MB file, in-process.

A read that streams stops after its 2000 lines (or 50 KB), so the size of the
rest of the file must not matter. Both files are built from the same 1 MiB block
of ~80-char lines, so the page read is identical and only the file size differs.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from _common import Row, log, median, now

TARGET = 1.5
MIB = 1 << 20


def make_block() -> bytes:
    """1 MiB of numbered ~80-char lines (the numbers keep lines distinct)."""
    lines, size, n = [], 0, 0
    while size < MIB:
        line = f"{n:08d} the quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet\n"
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines).encode()[:MIB]


NUMBERED = re.compile(r"^\d+: ", re.MULTILINE)


def numbered(output: str) -> list[str]:
    """The file lines of a read's output (``N: text``), without header or footer."""
    return [line for line in output.splitlines() if NUMBERED.match(line)]


def write_repeated(path: Path, block: bytes, times: int) -> None:
    with path.open("wb") as f:
        for _ in range(times):
            f.write(block)


async def run(quick: bool) -> list[Row]:
    from tools.host import ToolHost

    big_mib = 256 if quick else 1024
    reps = 10 if quick else 30
    with tempfile.TemporaryDirectory(prefix="bench-read-") as tmp:
        root = Path(tmp)
        block = make_block()
        small, big = root / "small.txt", root / "big.txt"
        write_repeated(small, block, 1)
        start = now()
        write_repeated(big, block, big_mib)
        log(f"read_big: wrote {big_mib} MiB in {now() - start:.1f} s")
        try:
            host = ToolHost(root)
            ours: list[float] = []
            base: list[float] = []
            for path in (small, big):  # warm-up, and a check the reads are equal
                result = await host.execute("read", {"filePath": str(path)})
                assert not result.is_error, result.output
            pages = [
                numbered((await host.execute("read", {"filePath": str(p)})).output)
                for p in (small, big)
            ]
            if not pages[0] or pages[0] != pages[1]:
                raise AssertionError("read: first page of the big file differs from the small")
            for _ in range(reps):
                for path, samples in ((big, ours), (small, base)):
                    start = now()
                    result = await host.execute("read", {"filePath": str(path)})
                    samples.append(now() - start)
                    if result.is_error:
                        raise AssertionError(f"read failed: {result.output}")
        finally:
            big.unlink(missing_ok=True)  # never leave a GB behind, even on failure
    ratio = median(ours) / median(base)
    return [
        Row(
            f"read 2000 lines: {big_mib} MiB vs 1 MiB",
            median(ours),
            median(base),
            f"≤ {TARGET}x",
            ratio <= TARGET,
            note=f"in-process ToolHost.execute; median of {reps} interleaved reads each",
        )
    ]
