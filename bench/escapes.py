"""The escape corpus (``tests/security/escapes``) against three sandboxes: toolhost's,
Claude Code's sandbox-runtime (``srt``) and Codex's (``codex sandbox``).

    .venv/bin/python bench/escapes.py                 # every case, all three
    .venv/bin/python bench/escapes.py --only git,tmux # classes or case ids
    .venv/bin/python bench/escapes.py --sandboxes toolhost,srt --markdown

Each case runs first with no sandbox, where the attack must work (else the case is
``broken`` here and proves nothing), then under each sandbox in a fresh world. All
three get the same writable folder (the project) and the same domain list
(``pypi.org``); ``sandboxes.py`` says how each is set up. The worlds live under
``/var/tmp`` (not ``/tmp``, which Codex's workspace-write leaves writable).

The table goes to stdout (``--markdown``: for bench/README.md); progress to stderr.
The exit status is 1 when toolhost misses a case that srt or Codex holds.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import _npm  # noqa: E402

from tests.security.escapes import corpus, runner  # noqa: E402
from tests.security.escapes.sandboxes import Codex, Sandbox, Srt, Toolhost  # noqa: E402

SHOWN = {
    "held": "held",
    "escaped": "**escaped**",
    "allowed": "allowed",
    "blocked": "**blocked**",
    "no domain list": "no domain list",
    "skipped": "skipped",
    "broken": "broken",
    "error": "error",
}


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def srt() -> Srt:
    missing = [tool for tool in ("bwrap", "socat", "rg") if shutil.which(tool) is None]
    if missing:
        debian = "Debian: apt-get install bubblewrap socat ripgrep"
        return Srt(None, f"srt needs {', '.join(missing)} on PATH ({debian})")
    try:
        return Srt(_npm.sandbox_runtime())
    except _npm.Unavailable as error:
        return Srt(None, str(error))


def codex() -> Codex:
    try:
        binary = _npm.codex()
    except _npm.Unavailable as error:
        return Codex(None, None, str(error))
    home = _npm.cache_root() / "codex-home"  # empty config: only the -c overrides apply
    home.mkdir(parents=True, exist_ok=True)
    return Codex(binary, home)


def version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return "?"
    return (
        (done.stdout or done.stderr).strip().splitlines()[0] if done.stdout or done.stderr else "?"
    )


def selected(only: str | None) -> list[corpus.Case]:
    cases = corpus.load()
    if not only:
        return cases
    wanted = set(only.split(","))
    return [c for c in cases if c.klass in wanted or c.id in wanted]


async def run(
    cases: list[corpus.Case], boxes: list[Sandbox], base: Path
) -> list[list[runner.Verdict]]:
    rows = []
    for number, case in enumerate(cases, 1):
        root = base / case.id
        reason = runner.why_not(case)
        if reason:
            rows.append([runner.Verdict(case, b.name, "skipped", reason) for b in boxes])
        else:
            bare = await runner.baseline(case, root)
            why = runner.broken(bare)
            if why:
                rows.append([runner.Verdict(case, b.name, "broken", why) for b in boxes])
            else:
                rows.append([await runner.verdict(case, b, root, bare=bare) for b in boxes])
        shown = "  ".join(f"{v.sandbox}={v.result}" for v in rows[-1])
        log(f"[{number}/{len(cases)}] {case.id}: {shown}")
        shutil.rmtree(root, ignore_errors=True)
    return rows


def misses(rows: list[list[runner.Verdict]]) -> list[str]:
    """Cases a peer holds and toolhost does not (a domain-list case toolhost could not
    be given the list for is named apart, not counted)."""
    found = []
    for row in rows:
        ours = next((v for v in row if v.sandbox == "toolhost"), None)
        peers = [v for v in row if v.sandbox != "toolhost" and v.held]
        if ours is None or ours.held or not peers or ours.result == "no domain list":
            continue
        if "toolhost" in ours.case.known:  # documented, and expected by the test suite
            continue
        holders = ", ".join(v.sandbox for v in peers)
        found.append(f"{ours.case.id} (held by {holders}; toolhost: {ours.result})")
    return found


def table(rows: list[list[runner.Verdict]], boxes: list[Sandbox]) -> list[str]:
    names = [b.name for b in boxes]
    lines = ["| case | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    klass = ""
    for row in rows:
        case = row[0].case
        if case.klass != klass:
            klass = case.klass
            lines.append(f"| **{klass}** |" + " |" * len(names))
        cells = [SHOWN[v.result] for v in row]
        lines.append(f"| `{case.id}` {case.title} | " + " | ".join(cells) + " |")
    totals = []
    for index in range(len(names)):
        verdicts = [row[index] for row in rows if row[index].case.expect == "escape"]
        held = sum(v.result == "held" for v in verdicts)
        ran = sum(v.result in ("held", "escaped") for v in verdicts)
        totals.append(f"{held}/{ran}")
    lines.append("| **held / run** | " + " | ".join(totals) + " |")
    return lines


def notes(rows: list[list[runner.Verdict]]) -> list[str]:
    """Why each case was not run, or not run everywhere, and toolhost's known gaps."""
    found = [
        f"- `{row[0].case.id}`, known not held by toolhost: {row[0].case.known['toolhost']}"
        for row in rows
        if "toolhost" in row[0].case.known
    ]
    for row in rows:
        for v in row:
            if v.result in ("skipped", "broken", "error", "no domain list"):
                found.append(f"- `{v.case.id}` under {v.sandbox}: {v.result}: {v.detail[:200]}")
    return found


def machine() -> str:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{platform.node()}: {os.cpu_count()} CPUs ({model}), Linux {platform.release()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="classes or case ids, comma-separated")
    parser.add_argument("--sandboxes", default="toolhost,srt,codex")
    parser.add_argument("--markdown", action="store_true", help="the table for bench/README.md")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="toolhost-escapes-data-")  # toolhost's checkpoints
    os.environ.setdefault("TOOLHOST_DATA_DIR", data)
    makers: dict[str, Callable[[], Sandbox]] = {"toolhost": Toolhost, "srt": srt, "codex": codex}
    boxes = [makers[name]() for name in args.sandboxes.split(",")]
    for box in boxes:
        log(f"{box.name}: {box.unavailable() or 'ready'}")
    cases = selected(args.only)
    base = Path(tempfile.mkdtemp(prefix="toolhost-escapes-", dir="/var/tmp"))
    load_before = os.getloadavg()
    started = datetime.datetime.now()
    try:
        rows = asyncio.run(run(cases, boxes, base))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
    load_after = os.getloadavg()
    took = (datetime.datetime.now() - started).total_seconds()
    ours = _toolhost(boxes)
    no_list = ours is not None and not ours.domains
    head = [
        f"Escape corpus: {len(cases)} cases, {started:%Y-%m-%d %H:%M}, {machine()}, "
        f"load {load_before[0]:.2f} → {load_after[0]:.2f}, {took:.0f} s.",
        f"srt: {version([str(_srt_binary(boxes)), '--version'])}; "
        f"codex: {version([str(_codex_binary(boxes)), '--version'])}; "
        f"toolhost: {version(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'])}"
        + (" (network: deny: no domain list in this checkout)" if no_list else ""),
        "",
    ]
    lines = [*head, *table(rows, boxes), "", *notes(rows)]
    if not args.markdown:
        lines = [line.replace("**", "").replace("`", "") for line in lines]
    print("\n".join(lines))
    missed = misses(rows)
    if missed:
        print("\ntoolhost misses a case a peer holds:\n" + "\n".join(f"- {m}" for m in missed))
    return 1 if missed else 0


def _toolhost(boxes: list[Sandbox]) -> Toolhost | None:
    return next((b for b in boxes if isinstance(b, Toolhost)), None)


def _srt_binary(boxes: list[Sandbox]) -> Path | None:
    return next((b.binary for b in boxes if isinstance(b, Srt)), None)


def _codex_binary(boxes: list[Sandbox]) -> Path | None:
    return next((b.binary for b in boxes if isinstance(b, Codex)), None)


if __name__ == "__main__":
    sys.exit(main())
