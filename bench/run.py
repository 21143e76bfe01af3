"""Run toolhost's benchmarks and print one table of figures against their baselines.

    .venv/bin/python bench/run.py [--only spawn,roundtrip,...] [--quick] [--markdown]

Every ratio is measured in the same run as its baseline, on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
import tempfile
import traceback

import _npm
from _common import Row, log, machine_info, render_table

BENCHMARKS = (
    "spawn",
    "roundtrip",
    "search",
    "read_big",
    "diff_big",
    "bash_call",
    "webfetch_big",
    "grep_peers",
    "read_peers",
    "edit_big",
    "sandbox_cost",
    "mcp_door",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, smaller files")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {BENCHMARKS}")
    args.chosen = chosen
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # On SIGTERM (e.g. `timeout`), unwind normally so temp trees and the 1 GiB file go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Other work on the machine inflates wall times; say how busy it was.
    load_at_start = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    rows: list[Row] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-data-") as data:
        # Truncated outputs of in-process calls land here, not in the user's data dir.
        os.environ["TOOLHOST_DATA_DIR"] = data
        for name in args.chosen:
            log(f"== {name}{' (quick)' if args.quick else ''}")
            module = importlib.import_module(name)
            try:
                rows += asyncio.run(module.run(args.quick))
            except _npm.Unavailable as error:
                log(f"{name}: not run: {error}")
                failed.append(f"{name} (not run: {error})")
            except Exception:
                traceback.print_exc()
                failed.append(name)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{machine_info()}{' [quick]' if args.quick else ''}")
    print(f"load average at start {load_at_start}, at end {load} (1, 5, 15 min)\n")
    print(render_table(rows, markdown=args.markdown))
    if failed:
        print(f"\nFAILED to run: {', '.join(failed)}")
    return 1 if failed or any(r.passed is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
