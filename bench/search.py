"""(c) ``grep`` and ``glob`` through the sidecar vs raw ``rg`` on a 20k-file tree.

The sidecar side is a ``tools/execute`` over JSON-RPC to an initialized server;
the baseline is ``rg`` itself, started with the same flags the tool passes, from
this process. Both must find the same files and lines, and the patterns match
fewer than 100 of them so the tools' result cap hides nothing.
"""

from __future__ import annotations

import random
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

TARGET = 1.2
GREP_PATTERN = "zebra_marker_[0-9]+"
GLOB_PATTERN = "**/*.cfg"
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


def generate_tree(root: Path, *, top: int = 16, mid: int = 16, leaves: int = 80) -> int:
    """top*mid*leaves small text files (20 480 by default), a few dozen matching."""
    rng = random.Random(1234)
    count = 0
    for a in range(top):
        for b in range(mid):
            folder = root / f"pkg{a:02d}" / f"mod{b:02d}"
            folder.mkdir(parents=True)
            for c in range(leaves):
                lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(6)]
                # 43 files carry a marker line, about half of them two: ~64 matching
                # lines, well under the tools' 100-result cap.
                if count % 480 == 7:
                    lines.insert(2, f"value = zebra_marker_{count}")
                    if (a + b) % 2 == 0:
                        lines.append(f"# zebra_marker_{count} again")
                # ~62 files match the glob.
                suffix = ".cfg" if count % 331 == 5 else ".txt"
                (folder / f"file{c:03d}{suffix}").write_text("\n".join(lines) + "\n")
                count += 1
    return count


# Exactly the flags tools/builtin/grep.py and glob.py pass (tools/fsio/rg.py adds --no-config).
def grep_argv(rg: str, root: Path) -> list[str]:
    return [
        rg,
        "--no-config",
        "-nH",
        "--null",
        "--hidden",
        "--no-messages",
        "--field-match-separator=|",
        "--glob=!.git",
        "--regexp",
        GREP_PATTERN,
        "--",
        str(root),
    ]


def glob_argv(rg: str) -> list[str]:
    return [
        rg,
        "--no-config",
        "--files",
        "--null",
        "--hidden",
        "--glob=!.git",
        f"--glob={GLOB_PATTERN}",
    ]


def rg_grep(rg: str, root: Path) -> set[tuple[str, int]]:
    done = subprocess.run(grep_argv(rg, root), capture_output=True, check=False)
    found = set()
    for record in done.stdout.decode().splitlines():
        path, _, rest = record.partition("\0")
        found.add((str(Path(path).resolve()), int(rest.split("|", 1)[0])))
    return found


def rg_glob(rg: str, root: Path) -> set[str]:
    done = subprocess.run(glob_argv(rg), capture_output=True, cwd=root, check=False)
    return {str((root / p).resolve()) for p in done.stdout.decode().split("\0") if p}


LINE_RE = re.compile(r"^\s+Line (\d+):")


def parse_grep_output(output: str) -> set[tuple[str, int]]:
    """OpenCode's format: an absolute path and ':' per file, then '  Line N: text'."""
    found, current = set(), None
    for line in output.splitlines():
        if line.startswith("/") and line.endswith(":"):
            current = str(Path(line[:-1]).resolve())
        elif (m := LINE_RE.match(line)) and current is not None:
            found.add((current, int(m.group(1))))
    return found


def parse_glob_output(output: str) -> set[str]:
    return {str(Path(line).resolve()) for line in output.splitlines() if line.startswith("/")}


async def run(quick: bool) -> list[Row]:
    from tools.fsio.rg import rg_path

    rg = rg_path()
    runs = 3 if quick else 10
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        start = now()
        files = generate_tree(root)
        log(f"search: generated {files} files in {fmt_time(now() - start)}")

        client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=server_env(Path(tmp)))
        try:
            await client.initialize(root)
            cases = [
                ("grep", {"pattern": GREP_PATTERN}, parse_grep_output, lambda: rg_grep(rg, root)),
                ("glob", {"pattern": GLOB_PATTERN}, parse_glob_output, lambda: rg_glob(rg, root)),
            ]
            for tool, args, parse, baseline in cases:
                rows.append(await compare(client, tool, args, parse, baseline, runs))
        finally:
            await client.close()
    return rows


async def compare(
    client: RpcClient,
    tool: str,
    args: dict[str, str],
    parse: Callable[[str], set[Any]],
    baseline: Callable[[], set[Any]],
    runs: int,
) -> Row:
    # Same results first: a fast wrong answer is not a result.
    result = await execute(client, tool, args)
    ours_found, rg_found = parse(result["output"]), baseline()
    if result["metadata"].get("truncated"):
        raise AssertionError(f"{tool}: output truncated; the pattern must match < 100 results")
    if ours_found != rg_found:
        raise AssertionError(
            f"{tool}: results differ from rg: only ours {sorted(ours_found - rg_found)[:5]}, "
            f"only rg {sorted(rg_found - ours_found)[:5]}"
        )
    ours, base = [], []
    for _ in range(runs):
        start = now()
        await execute(client, tool, args)
        ours.append(now() - start)
        start = now()
        baseline()
        base.append(now() - start)
    ratio = median(ours) / median(base)
    return Row(
        f"{tool} `{args['pattern']}` via sidecar",
        median(ours),
        median(base),
        f"≤ {TARGET}x",
        ratio <= TARGET,
        note=f"{len(rg_found)} results, identical to rg; median of {runs}",
    )
