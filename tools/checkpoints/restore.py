"""Putting paths back as a checkpoint found them, as a journalled step that a kill
cannot leave half done.

``plan`` decides, path by path: back to what it held before the first checkpoint of
the chain that touched it, unless it changed since the last one did (then it is
skipped, with the reason, unless ``force`` names it). ``apply`` first keeps what every
path holds now in a new checkpoint (the restore is itself a checkpoint: restoring that
one undoes it), writes the journal (``restore.json``, locked while it runs), puts the
paths back, and removes the journal. A journal nobody holds is a restore that was
killed: ``recover`` finishes it (a path already back is left, a path still as the
restore found it is put back, one changed by someone since is left and reported).

Order: files and links that go away, then folders that go away (deepest first), then
folders that come back (outermost first), then files and links. A folder that
holds something the turn did not make stays, and is reported.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.checkpoints.store import (
    Before,
    Run,
    State,
    checkpoints_root,
    read_json,
    read_run,
    state_of,
)
from tools.checkpoints.summary import PathChange, merge

log = logging.getLogger("toolhost.checkpoints")

JOURNAL = "restore.json"
UNANSWERED = (
    "changed outside toolhost during the turn, and you have not answered the review of "
    "it yet; left as it is (answer the review, or name it in force to put it back anyway)"
)


@dataclass
class Op:
    path: str
    target: Before
    expected: State  # what the last checkpoint of the chain left there

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "target": self.target.to_json()}


@dataclass
class Plan:
    ops: list[Op] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


def plan(
    changes: Iterable[tuple[str, Before, State]],
    store: Path,
    force: set[str],
    saved_by_user: dict[str, set[str]],
) -> Plan:
    """``changes``: (path, the earliest before, the latest after) per path of the chain.
    ``saved_by_user``: path -> hashes of contents the person saved during the chain."""
    result = Plan()
    for path, before, after in changes:
        target = before.state(store)
        now = state_of(path)
        if now == target:
            continue
        forced = path in force
        if now != after and not forced:
            result.skipped.append(
                {
                    "path": path,
                    "reason": "changed since the agent's turn (by you or another agent); "
                    "left as it is (name it in force to put it back anyway)",
                }
            )
            continue
        if now.kind == "file" and now.sha in saved_by_user.get(path, set()) and not forced:
            result.skipped.append(
                {
                    "path": path,
                    "reason": "you saved it in the editor after the agent changed it; "
                    "left as it is (name it in force to put it back anyway)",
                }
            )
            continue
        result.ops.append(Op(path, before, after))
    return result


def plan_chain(
    chain: list[Path],
    store: Path,
    roots: list[str],
    held: dict[str, set[str]],
    wanted: set[str] | None,
    force: set[str],
    saved_by_user: dict[str, set[str]],
) -> Plan:
    """``plan`` over a chain of checkpoints; ``held`` (checkpoint id -> paths): outside
    changes still under review, left and reported; ``wanted``: only these paths."""
    changes = chain_changes(chain, store, roots, leave=held)
    waiting = set().union(*held.values()) - {c[0] for c in changes}
    if wanted is not None:
        changes = [c for c in changes if c[0] in wanted]
        waiting &= wanted
    result = plan(changes, store, force, saved_by_user)
    result.skipped += [{"path": p, "reason": UNANSWERED} for p in sorted(waiting)]
    return result


def _phase(op: Op) -> tuple[int, int]:
    depth = op.path.count("/")
    kind = op.target.kind
    if kind == "absent":
        is_dir = os.path.isdir(op.path) and not os.path.islink(op.path)
        return (1, -depth) if is_dir else (0, 0)
    if kind == "dir":
        return (2, depth)
    return (3, depth)


def ordered(ops: list[Op]) -> list[Op]:
    return sorted(ops, key=_phase)


def begin(folder: Path, ops: list[Op]) -> int:
    """Keep what each path holds now (the undo checkpoint's run), then write and lock
    the journal. Returns the lock's fd (``finish`` releases it)."""
    run = Run(folder / "runs" / "0001-restore")
    for op in ops:
        run.keep(op.path, link=True)
    journal = folder / JOURNAL
    temp = journal.with_name(JOURNAL + ".tmp")
    body = {"pid": os.getpid(), "ops": [op.to_json() for op in ops]}
    temp.write_text(json.dumps(body), encoding="utf-8")
    fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.replace(temp, journal)
    return fd


def finish(folder: Path, fd: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (folder / JOURNAL).unlink()
    os.close(fd)


def put_back(path: str, target: Before, store: Path) -> None:
    """Make ``path`` hold ``target`` (raises OSError, e.g. a folder that is not empty)."""
    kind = target.kind
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    is_dir = info is not None and os.path.isdir(path) and not os.path.islink(path)
    if kind == "absent":
        if info is None:
            return
        if is_dir:
            os.rmdir(path)
        else:
            os.unlink(path)
        return
    if kind == "dir":
        if info is not None and not is_dir:
            os.unlink(path)
        if info is None or not is_dir:
            os.mkdir(path, target.mode or 0o755)
        os.chmod(path, target.mode or 0o755)
        return
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    temp = os.path.join(parent, f".{os.path.basename(path)}.toolhost-restore")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    if kind == "file":
        shutil.copyfile(store / target.blob, temp)
        os.chmod(temp, target.mode)
    elif kind == "symlink":
        os.symlink(target.link, temp)
    else:
        raise OSError(f"{path}: a {kind} cannot be put back")
    if is_dir:
        os.rmdir(path)  # a folder where the file was: only when empty
    os.replace(temp, path)


def apply(ops: list[Op], store: Path) -> tuple[list[str], list[dict[str, str]]]:
    restored: list[str] = []
    failed: list[dict[str, str]] = []
    for op in ordered(ops):
        try:
            put_back(op.path, op.target, store)
        except OSError as error:
            failed.append({"path": op.path, "reason": _reason(error)})
        else:
            restored.append(op.path)
    return restored, failed


def _reason(error: OSError) -> str:
    if error.strerror and "not empty" in error.strerror.lower():
        return "it is a folder that holds files the turn did not make; left in place"
    return f"could not be put back ({error.strerror or error})"


def recover() -> list[str]:
    """Finish every restore that was killed; one line per thing done or left alone."""
    report: list[str] = []
    try:
        stores = [p for p in checkpoints_root().iterdir() if p.is_dir()]
    except FileNotFoundError:
        return []
    for store in stores:
        for journal in store.glob(f"*/{JOURNAL}"):
            report += _recover_one(store, journal.parent)
    return report


def _recover_one(store: Path, folder: Path) -> list[str]:
    journal = folder / JOURNAL
    try:
        fd = os.open(journal, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return []  # running in another process
        body = read_json(journal)
        if not isinstance(body, dict):
            return [f"could not read the restore journal {journal}; it was left in place"]
        pre = {b.path: b for run in (folder / "runs").glob("*") for b in read_run(run, store)}
        report = []
        ops = [Before.from_json(o["target"]) for o in body.get("ops", [])]
        for target in sorted(ops, key=lambda b: _phase(Op(b.path, b, State("absent")))):
            path = target.path
            now = state_of(path)
            if now == target.state(store):
                continue
            before = pre.get(path)
            if before is not None and now == before.state(store):
                try:
                    put_back(path, target, store)
                    report.append(f"{path}: put back (an interrupted undo, finished)")
                except OSError as error:
                    report.append(f"{path}: could not be put back ({error.strerror or error})")
            else:
                report.append(f"{path}: changed by someone after an interrupted undo; left")
        with contextlib.suppress(FileNotFoundError):
            journal.unlink()
        for line in report:
            log.warning("recovery: %s", line)
        return report
    finally:
        os.close(fd)


def chain_changes(
    chain: list[Path], store: Path, roots: list[str], *, leave: dict[str, set[str]] | None = None
) -> list[tuple[str, Before, State]]:
    """(path, earliest before, latest after) over the checkpoints of ``chain`` (oldest
    first), each from its summary (or merged now when it has none), outside changes
    included but those ``leave`` names (checkpoint id -> paths)."""
    first: dict[str, Before] = {}
    last: dict[str, State] = {}
    for folder in chain:
        left = (leave or {}).get(folder.name, set())
        for change in load_changes(folder, store, roots, outside=True, leave=left):
            first.setdefault(change.path, change.before)
            last[change.path] = change.after
    return [(path, before, last[path]) for path, before in first.items()]


def load_changes(
    folder: Path,
    store: Path,
    roots: list[str],
    *,
    outside: bool = True,
    leave: frozenset[str] | set[str] = frozenset(),
) -> list[PathChange]:
    """A checkpoint's changes (outside ones that can be undone too, with ``outside``,
    but those in ``leave``)."""
    summary = read_json(folder / "summary.json")
    if not isinstance(summary, dict):
        return merge(folder, store, roots)
    found = [PathChange.from_json(f) for f in summary.get("files", [])]
    if outside:
        away = [PathChange.from_json(f) for f in summary.get("outside", [])]
        found += [c for c in away if c.path not in leave]
    return [c for c in found if c.before.kind != "unknown"]
