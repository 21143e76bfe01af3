"""Running a command again after a person allowed a folder the sandbox stopped a write
to, without repeating what its first run did.

The first run's capture (``tools.bash.sandbox.capture``, a run folder of the turn)
says what every path it touched held before it; ``first_run`` lists what it changed,
for the prompt, and ``put_back`` restores those paths just before the second run (a
path changed meanwhile by someone else is left, and said). Where the sandbox could
not record the first run (no seccomp listener here), ``recorded`` says why, and the
prompt says that its effects may repeat.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tools.bash import process
from tools.bash.sandbox.plan import Plan
from tools.checkpoints import restore
from tools.checkpoints.store import inside_git, read_run, state_of
from tools.checkpoints.summary import PathChange, action_of


@dataclass
class FirstRun:
    recorded: str | None  # "on", or why the first run was not recorded
    changes: list[PathChange] = field(default_factory=list)
    store: Path | None = None

    def described(self, worktree: Path) -> str:
        if self.recorded != "on":
            why = self.recorded or "the sandbox records commands only inside a turn"
            return (
                f"what its first run changed could not be recorded ({why}): its effects may repeat"
            )
        if not self.changes:
            return "its first run changed nothing in the project"
        shown = [f"{_shown(c.path, worktree)} ({c.action})" for c in self.changes[:10]]
        more = f" and {len(self.changes) - 10} more" if len(self.changes) > 10 else ""
        return (
            f"the first run changed {', '.join(shown)}{more}; these are put back as they "
            "were before it runs again"
        )


def first_run(plan: Plan, finished: process.Finished) -> FirstRun:
    """What the first run changed (blocking: hashes what it touched)."""
    if plan.capture is None or finished.capture != "on":
        return FirstRun(finished.capture)
    run = Path(plan.capture["folder"])
    store = run.parent.parent.parent  # <store>/<checkpoint>/runs/<run>
    roots = list(plan.capture.get("roots", []))
    earliest: set[str] = set()
    changes = []
    for before in read_run(run, store):
        if before.path in earliest or inside_git(before.path, roots):
            continue
        earliest.add(before.path)
        now = state_of(before.path)
        was = before.state(store)
        if was != now:
            changes.append(PathChange(before.path, before, now, ["bash"], action_of(was, now)))
    return FirstRun("on", changes, store)


def put_back(first: FirstRun) -> tuple[list[str], list[dict[str, str]]]:
    """Restore what the first run changed (paths changed since the prompt are left)."""
    if first.store is None or not first.changes:
        return [], []
    triples = [(c.path, c.before, c.after) for c in first.changes]
    planned = restore.plan(triples, first.store, set(), {})
    restored, failed = restore.apply(planned.ops, first.store)
    return restored, planned.skipped + failed


def _shown(path: str, worktree: Path) -> str:
    root = os.path.realpath(worktree)
    return path[len(root) + 1 :] if path.startswith(root + "/") else path
