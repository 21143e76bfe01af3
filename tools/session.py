"""Per-session state: read stamps for read-before-write (reference §4)."""

from __future__ import annotations

import json
import os
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tools.errors import ToolError

if TYPE_CHECKING:
    import asyncio

# Coarse file systems report mtimes rounded; 50 ms matches OpenCode's tolerance.
TOLERANCE_NS = 50_000_000
DOOM_LOOP_THRESHOLD = 3


@dataclass
class Session:
    id: str
    read_stamps: dict[str, int] = field(default_factory=dict)  # path -> mtime_ns at read
    todos: list[dict[str, Any]] = field(default_factory=list)
    # Instruction files (AGENTS.md, ...) a read already brought along (tools.config.instructions).
    instructions: set[str] = field(default_factory=set)
    # Off for a person at a shell (`toolhost run`): the check guards a model's stale view.
    read_before_write: bool = True
    # (message id, tool id, canonical args) of the latest calls, for the doom-loop check.
    recent_calls: deque[tuple[str, str, str]] = field(
        default_factory=lambda: deque(maxlen=DOOM_LOOP_THRESHOLD)
    )

    def is_doom_loop(self, message_id: str, tool_id: str, args: Any) -> bool:
        """Record a call; True when it is the third identical one in a row (reference §3.7).

        Calls of one assistant message are compared when the client names messages;
        otherwise consecutive calls of the session.
        """
        canonical = _canonical(args)
        self.recent_calls.append((message_id, tool_id, canonical))
        return len(self.recent_calls) == DOOM_LOOP_THRESHOLD and len(set(self.recent_calls)) == 1

    def record_read(self, path: Path | str, mtime_ns: int | None = None) -> None:
        """Stamp ``path`` as read; ``mtime_ns``: its modification time from a stat taken
        before the read (a change during the read then counts as unseen), else now."""
        key = os.fspath(path)
        if mtime_ns is not None:
            self.read_stamps[key] = mtime_ns
            return
        try:
            self.read_stamps[key] = os.stat(key).st_mtime_ns
        except OSError:
            self.read_stamps.pop(key, None)

    def assert_fresh(self, path: Path) -> None:
        """Refuse to overwrite a file this session has not read, or that changed since."""
        if not self.read_before_write or (
            os.environ.get("OPENCODE_DISABLE_FILETIME_CHECK", "").lower() == "true"
        ):
            return
        stamp = self.read_stamps.get(str(path))
        if stamp is None:
            raise ToolError(
                f"You must read file {path} before overwriting it. Use the Read tool first"
            )
        current = path.stat().st_mtime_ns
        if current > stamp + TOLERANCE_NS:
            raise ToolError(
                f"File {path} has been modified since it was last read.\n"
                f"Last modification: {_iso(current)}\n"
                f"Last read: {_iso(stamp)}\n\n"
                "Please read the file again before modifying it."
            )


def _canonical(args: Any) -> str:
    """One text per value of ``args``, whatever its key order (orjson when it can: this
    runs for every call)."""
    try:
        return orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # a value orjson refuses (an integer past 64 bits, a lone surrogate)
        pass
    try:
        return json.dumps(args, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(args)


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds")


def _new_lock() -> asyncio.Lock:
    import asyncio  # where it runs: `toolhost list` never imports it

    return asyncio.Lock()


class Sessions:
    def __init__(self, *, read_before_write: bool = True) -> None:
        self.read_before_write = read_before_write
        self._sessions: dict[str, Session] = {}
        # One lock per file, shared by every session: concurrent edits to one file
        # are serialised so neither overwrites the other.
        self._file_locks: defaultdict[str, asyncio.Lock] = defaultdict(_new_lock)

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            session = Session(session_id, read_before_write=self.read_before_write)
            self._sessions[session_id] = session
        return session

    def file_lock(self, path: Path) -> asyncio.Lock:
        # Keyed on the real path, so an edit through a symlink and one to its
        # target wait for each other.
        return self._file_locks[os.path.realpath(path)]
