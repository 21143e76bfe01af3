"""What lets the suite run in several processes (pytest-xdist) at once.

``pytest`` runs the suite in worker processes (``-n auto --dist loadfile`` in
pyproject.toml). A test file is one unit of work: its tests run in one worker, in order,
so its module-scoped fixtures start once. Files marked ``early`` start first: they are
the long chains (a real VS Code, Neovim waiting on the clock) that would otherwise end
last. (Not ``--dist loadgroup``: with pytest 9.2 it silently stopped grouping,
pytest-xdist issue 1386; ``loadfile`` splits the test ids, which still works.)

What several processes share goes through here:

- ``install_lock(folder)``: an install into a folder every run shares (``~/.cache``, the
  checkout's ``node_modules``) is done under this lock, and checked again inside it, so
  two workers, or two runs on one machine, never install the same thing at once.
- ``built_once(factory, name, build)``: something built from the checkout once per run
  (the VS Code package), by whichever worker needs it first; the others wait and reuse it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Workers for a whole-suite run: most of the suite waits on other processes (Neovim,
# code-server, the agents, the sidecars), so a 2-core machine keeps three busy. Not
# four: the long files that start first (code-server and chromium, tsc and mypy, Neovim)
# then all want the CPU at once, and the tests with a deadline (a turn's first scan,
# an agent's MCP connection) began to miss it under load.
WORKERS = 3


@contextlib.contextmanager
def install_lock(folder: Path) -> Iterator[None]:
    """Holds the exclusive lock of ``folder`` (which need not exist), across processes.

    The lock file is outside ``folder`` and the checkout (an install may delete the one
    and must not leave files in the other); the kernel releases the lock when its holder
    dies, so a killed run never leaves it taken."""
    path = str(folder.resolve())
    name = f"{folder.name}-{hashlib.sha256(path.encode()).hexdigest()[:16]}.lock"
    lock_file = Path(tempfile.gettempdir()) / f"toolhost-test-locks-{os.getuid()}" / name
    lock_file.parent.mkdir(mode=0o700, exist_ok=True)
    with open(lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_folder(factory: pytest.TempPathFactory) -> Path:
    """A folder shared by every worker of this run (the run's base temp folder)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``run_folder/name``, filled by ``build(folder)`` once per run, whichever worker
    asks first; a build that failed is tried again by the next one that asks."""
    shared = run_folder(factory)
    folder = shared / name
    done = shared / f"{name}.done"
    with install_lock(folder):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def early_files_first(items: list[pytest.Item]) -> None:
    """In a worker, the files with an ``early`` test move to the front, whole and in
    their order (the workers all collect the same order, and ``--no-loadscope-reorder``
    keeps it); the rest keep theirs. A run in one process keeps the file order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    files: dict[str, list[pytest.Item]] = {}
    early: set[str] = set()
    for item in items:
        name = item.nodeid.split("::", 1)[0]
        files.setdefault(name, []).append(item)
        if item.get_closest_marker("early"):
            early.add(name)
    ordered = [f for f in files if f in early] + [f for f in files if f not in early]
    items[:] = [item for name in ordered for item in files[name]]


def workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` starts: ``WORKERS`` for the suite or a folder; for
    a few files, one each up to ``WORKERS``, and none for one file (it runs in this
    process, as a developer runs while working: starting a worker takes seconds)."""
    paths = {arg.split("::", 1)[0] for arg in config.args}
    if not all(Path(path).is_file() for path in paths):
        return WORKERS
    return 0 if len(paths) <= 1 else min(WORKERS, len(paths))
