"""(e) The diff behind a write with 2000 scattered changes in a 100k-line file.

Times ``tools.changes.diff.diff_texts`` alone (the target), the whole ``write`` tool call
in-process (informational: read stamp, permission, diff, LSP edits, atomic
write), and ``difflib.unified_diff`` on the same input as the baseline, in a
subprocess so it can be stopped after 30 s.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
import time
from pathlib import Path

from _common import PYTHON, Row, fmt_time, log, median, now

TARGET_SECONDS = 0.200
DIFFLIB_TIMEOUT = 30.0
LINES = 100_000
CHANGES = 2000

# Times only the diff, not reading the inputs or starting Python.
DIFFLIB_SCRIPT = """
import difflib, sys, time
old = open(sys.argv[1], encoding="utf-8").read().splitlines(keepends=True)
new = open(sys.argv[2], encoding="utf-8").read().splitlines(keepends=True)
start = time.perf_counter()
text = "".join(difflib.unified_diff(old, new, "a/f.py", "b/f.py"))
print(time.perf_counter() - start, len(text))
"""


def make_source(rng: random.Random) -> list[str]:
    """Python-looking lines with realistic repetition (blank lines, `return`, `pass`)."""
    lines = []
    for i in range(LINES // 10):
        lines += [
            f"def function_{i}(arg, value={i % 17}):\n",
            f'    """Compute thing number {i}."""\n',
            f"    result = helper_{i % 97}(arg) + value\n",
            "    if result is None:\n",
            "        return None\n",
            f"    for item in range({i % 13}):\n",
            "        result += item\n",
            "    return result\n",
            "\n",
            "\n",
        ]
    return lines


def scatter_changes(lines: list[str], rng: random.Random) -> list[str]:
    """2000 changes at random places: mostly edited lines, some inserts and deletes."""
    new = list(lines)
    # Apply from the bottom up so earlier indices stay valid.
    for k, index in enumerate(sorted(rng.sample(range(len(lines)), CHANGES), reverse=True)):
        kind = k % 10
        if kind < 8:
            new[index] = f"    changed_{k} = {rng.randrange(10**6)}  # edited\n"
        elif kind == 8:
            new.insert(index, f"    inserted_{k} = True\n")
        else:
            del new[index]
    return new


def run_difflib(old_path: Path, new_path: Path) -> float | None:
    """Seconds difflib took, or None if it did not finish within the timeout."""
    try:
        done = subprocess.run(
            [PYTHON, "-c", DIFFLIB_SCRIPT, str(old_path), str(new_path)],
            capture_output=True,
            text=True,
            timeout=DIFFLIB_TIMEOUT,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.split()[0])


async def time_write(root: Path, target: Path, texts: tuple[str, str], reps: int) -> list[float]:
    from tools.editor import EditorBridge
    from tools.host import ToolHost

    host = ToolHost(root)
    editor = EditorBridge(approve_all=True)
    target.write_text(texts[0])
    read = await host.execute("read", {"filePath": str(target)}, editor=editor, session_id="s")
    assert not read.is_error, read.output
    samples = []
    for i in range(reps + 1):
        # Alternate new/old so every write carries the same 2000 changes.
        content = texts[(i + 1) % 2]
        start = now()
        result = await host.execute(
            "write", {"filePath": str(target), "content": content}, editor=editor, session_id="s"
        )
        elapsed = now() - start
        if result.is_error:
            raise AssertionError(f"write failed: {result.output}")
        if target.read_text() != content:
            raise AssertionError("write: the file does not hold the written content")
        if i:  # the first write is warm-up
            samples.append(elapsed)
    return samples


async def run(quick: bool) -> list[Row]:
    from tools.changes.diff import diff_texts
    from tools.changes.positions import apply_text_edits

    reps = 3 if quick else 7
    rng = random.Random(42)
    old_lines = make_source(rng)
    new_lines = scatter_changes(old_lines, rng)
    old, new = "".join(old_lines), "".join(new_lines)

    result = diff_texts(old, new, "f.py")  # warm-up, and a check the diff is right
    if apply_text_edits(old, result.edits) != new:
        raise AssertionError("diff_texts: its edits do not turn old into new")
    if min(result.additions, result.deletions) < CHANGES * 0.8:
        raise AssertionError(f"diff_texts: only +{result.additions} -{result.deletions}")
    samples, cpu = [], []
    for _ in range(reps):
        start, start_cpu = now(), time.process_time()
        diff_texts(old, new, "f.py")
        samples.append(now() - start)
        cpu.append(time.process_time() - start_cpu)
    ours = median(samples)
    log(
        f"diff_big: diff_texts {[fmt_time(s) for s in samples]}, "
        f"+{result.additions} -{result.deletions}, {len(result.edits)} edits"
    )

    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        root = Path(tmp)
        old_path, new_path = root / "old.py", root / "new.py"
        old_path.write_text(old)
        new_path.write_text(new)
        base = run_difflib(old_path, new_path)
        log(f"diff_big: difflib {'> 30 s' if base is None else fmt_time(base)}")
        writes = await time_write(root, root / "f.py", (old, new), reps)

    diff_row = Row(
        f"diff_texts 100k lines, {CHANGES} changes",
        ours,
        base if base is not None else DIFFLIB_TIMEOUT,
        f"≤ {TARGET_SECONDS * 1e3:.0f} ms",
        ours <= TARGET_SECONDS,
        baseline_text=None if base is not None else f"> {DIFFLIB_TIMEOUT:.0f} s",
        note=f"median of {reps} (CPU time {fmt_time(median(cpu))}, which a busy machine "
        f"does not inflate); baseline: difflib.unified_diff, once, {DIFFLIB_TIMEOUT:.0f} s cap",
    )
    write_row = Row(
        "write tool call, same change",
        median(writes),
        None,
        "-",
        None,
        note=f"in-process ToolHost.execute('write'); median of {reps}",
    )
    return [diff_row, write_row]
