"""Watch config files and custom tool folders by polling, and report bursts of change.

Polling rather than inotify: the watched set is a dozen paths (config files, tool
folders), so a ``stat`` of each every half second costs nothing measurable, needs no
extra dependency, works on network and container file systems, and handles paths
that do not exist yet for free: a missing path is simply a snapshot of ``None``
until it appears, so there is no need to watch an ancestor for its creation.

A change is reported once per burst: after the first difference the watcher waits
until the snapshot has been stable for ``settle`` seconds (an editor's save, a
``git checkout`` touching several files), then calls ``on_change`` with the names of
the groups that changed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("toolhost.watch")

POLL_SECONDS = 0.5
SETTLE_SECONDS = 0.2
# A burst that never settles (a tool rewriting a file in a loop) is reported anyway.
MAX_SETTLE_SECONDS = 2.0

# Entries of a tool folder that never hold a tool: Python's bytecode cache (written
# when a tool is imported) and the packages OpenCode installs for JS/TS tools.
IGNORED_ENTRIES = frozenset({"__pycache__", "node_modules"})

Snapshot = dict[str, tuple[Any, ...]]
OnChange = Callable[[set[str]], Awaitable[None]]


def file_signature(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is written, replaced or removed (None: it does not exist)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns)


def folder_signature(path: Path) -> tuple[Any, ...] | None:
    """A folder's direct entries; a sub-folder counts by name only (tools are not nested)."""
    try:
        entries = sorted(os.scandir(path), key=lambda entry: entry.name)
    except OSError:
        return file_signature(path)  # missing, or a file where a folder belongs
    found: list[tuple[Any, ...]] = []
    for entry in entries:
        if entry.name in IGNORED_ENTRIES:
            continue
        try:
            info = entry.stat()
        except OSError:
            continue  # removed while listing: the next poll sees it gone
        if stat.S_ISDIR(info.st_mode):
            found.append((entry.name, "dir"))
        else:
            found.append((entry.name, info.st_ino, info.st_size, info.st_mtime_ns))
    return tuple(found)


class PollingWatcher:
    """Polls named groups of files and folders on an asyncio task."""

    def __init__(
        self,
        files: Mapping[str, Sequence[Path]],
        folders: Mapping[str, Sequence[Path]],
        on_change: OnChange,
        *,
        interval: float = POLL_SECONDS,
        settle: float = SETTLE_SECONDS,
    ) -> None:
        self.files = {name: tuple(paths) for name, paths in files.items()}
        self.folders = {name: tuple(paths) for name, paths in folders.items()}
        self.on_change = on_change
        self.interval = interval
        self.settle = settle
        self._task: asyncio.Task[None] | None = None
        self._baseline: Snapshot | None = None

    def snapshot(self) -> Snapshot:
        """Every group's current signature (blocking: a few stat calls)."""
        found: Snapshot = {}
        for name, paths in self.files.items():
            found[name] = tuple(file_signature(path) for path in paths)
        for name, paths in self.folders.items():
            found[name] = (*found.get(name, ()), *(folder_signature(path) for path in paths))
        return found

    def start(self) -> None:
        """Take the baseline now (so a change from here on is seen) and start polling."""
        if self._task is None:
            self._baseline = self.snapshot()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="toolhost-watch")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        last = self._baseline if self._baseline is not None else await self._snap()
        while True:
            await asyncio.sleep(self.interval)
            now = await self._snap()
            if now == last:
                continue
            now = await self._settled(now)
            changed = {name for name in now if now[name] != last.get(name)}
            last = now
            if not changed:
                continue  # changed and changed back within the burst
            try:
                await self.on_change(changed)
            except asyncio.CancelledError:
                raise
            except Exception:  # one failed reload must not stop watching
                log.exception("reloading after a change to %s failed", ", ".join(sorted(changed)))

    async def _settled(self, now: Snapshot) -> Snapshot:
        waited = 0.0
        while waited < MAX_SETTLE_SECONDS:
            await asyncio.sleep(self.settle)
            waited += self.settle
            again = await self._snap()
            if again == now:
                break
            now = again
        return now

    async def _snap(self) -> Snapshot:
        # In a worker thread: a stat on a slow (network) file system must not stall
        # the event loop that answers the editor.
        return await asyncio.to_thread(self.snapshot)
