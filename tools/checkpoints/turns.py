"""``Checkpoints``: one worktree's turns, what each changed, and putting them back.

A turn is the calls an agent makes for one user message. A client names it (a
``turnID`` on ``tools/execute``, ``turn/begin``, ``toolhost acp``'s ``session/prompt``,
MCP's ``_meta["toolhost/turn"]``); a call that names none continues its session's
turn unless the session has been idle for ``IDLE_SECONDS`` (the config's
``checkpoints.idleSeconds``), and then begins a new one. Every turn is a checkpoint
(``chk_…``): its file-tool calls keep what each path held before they wrote it
(``keep``), its bash commands have the sandbox do the same (``capture_spec``), and the
scans of ``outside`` find what changed beside them. When a turn ends, its
``summary.json`` fixes what it did.

This is the API the editors' protocol (``checkpoints/*``), ``toolhost undo`` and
``toolhost acp`` use: ``begin``/``turn_for``/``end`` mark turns, ``entries`` lists them,
``outside_changes``/``keep_outside``/``undo_outside`` are the after-the-fact review,
``restore`` puts a turn (and the ones after it) back.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.checkpoints import outside
from tools.checkpoints.store import (
    Run,
    State,
    digest_file,
    iso_time,
    missing_parents,
    new_checkpoint_id,
    read_json,
    session_of,
    worktree_folder,
    write_json,
)
from tools.checkpoints.summary import PathChange, detach_links, git_head, merge

log = logging.getLogger("toolhost.checkpoints")

IDLE_SECONDS = 30.0
MAX_AGE_DAYS = 14.0
MAX_BYTES = 512 << 20
SINCE_AT_MOST = 60.0  # how far back a client's ``since`` may put a turn's start (s)
_ids = itertools.count(1)


@dataclass
class Turn:
    id: str
    turn_id: str
    session_id: str
    title: str
    client: str
    folder: Path
    started: float
    kind: str = "turn"
    restores: str | None = None
    last: float = field(default_factory=time.monotonic)
    head: str | None = None
    baseline: outside.Index | None = None
    since: float | None = None  # when the client's message began it (else ``started``)
    started_ns: int = 0  # ``started`` to the nanosecond: the edge its scans date files by
    _scan: threading.Thread | None = None
    _runs: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _on_written: Callable[[Iterable[Path], Mapping[Path, str]], None] | None = None
    _on_created: Callable[[], None] | None = None

    def meta(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "turnID": self.turn_id,
            "sessionID": self.session_id,
            "title": self.title,
            "time": self.started,
            "client": self.client,
            "kind": self.kind,
            "restores": self.restores,
            "head": self.head,
        }

    def new_run(self, tool: str) -> Path:
        """A run folder for one call (the checkpoint's folder is made with the first)."""
        with self._lock:
            number = next(self._runs)
            if not (self.folder / "meta.json").exists():
                self.folder.mkdir(parents=True, exist_ok=True)
                write_json(self.folder / "meta.json", self.meta())
                if self._on_created is not None:
                    self._on_created()
        run = self.folder / "runs" / f"{number:04d}-{tool}"
        run.mkdir(parents=True)
        return run

    def wrote(self, paths: Iterable[Path], known: Mapping[Path, str] | None = None) -> None:
        """The file tools wrote ``paths`` (``known``: some of their sha256s): now toolhost's."""
        if self._on_written is not None:
            self._on_written(paths, known or {})

    def keep(self, paths: Iterable[Path], tool: str) -> None:
        """A file tool is about to change ``paths``: keep what they hold (blocking)."""
        run = Run(self.new_run(tool))
        for path in paths:
            for missing in reversed(missing_parents(path)):  # folders the change makes
                run.keep(str(missing))
            run.keep(str(path))

    def capture_spec(self, roots: list[str]) -> dict[str, Any]:
        """The ``Plan.capture`` of a bash command of this turn (a run folder of its own)."""
        return {"folder": str(self.new_run("bash")), "roots": roots}


class Checkpoints:
    def __init__(
        self,
        worktree: Path,
        roots: Callable[[], list[str]],
        *,
        max_age_days: float = MAX_AGE_DAYS,
        max_bytes: int = MAX_BYTES,
        outside_changes: bool = True,
    ) -> None:
        self.worktree = Path(os.path.realpath(worktree))
        self._roots = roots
        self.client = "unknown"
        self.max_age_days = max_age_days
        self.max_bytes = max_bytes
        self.track_outside = outside_changes
        self.idle_seconds = IDLE_SECONDS
        self._open: dict[str, Turn] = {}
        self._sessions: set[str] = set()  # this process's: never pruned
        self._saves: dict[str, set[str]] = {}  # path -> hashes the person saved
        self._writes: dict[str, set[str]] = {}  # path -> hashes toolhost's tools wrote
        self._lock = threading.RLock()
        self._baseline: outside.Baseline | None = None
        self._ending: dict[str, list[threading.Thread]] = {}  # session -> ending turns
        self._reviewing: set[str] = set()  # checkpoints whose outside review is open
        # Told (checkpoint id, session id) when a turn ends with changes made outside
        # toolhost, from a worker thread: the sidecar offers them for review.
        self.on_outside: Callable[[str, str], None] | None = None
        # Told, from any thread, when a checkpoint appears or a turn's summary is fixed.
        self.on_changed: Callable[[], None] | None = None

    @property
    def store(self) -> Path:
        return worktree_folder(self.worktree)

    def configure(self, settings: Any) -> None:
        """The config's ``checkpoints`` (``tools.config.effective.CheckpointSettings``)."""
        self.max_age_days = settings.max_age_days
        self.max_bytes = settings.max_bytes
        self._outside_allowed = settings.outside
        self.idle_seconds = settings.idle_seconds

    @property
    def watching_outside(self) -> bool:
        return self.track_outside and getattr(self, "_outside_allowed", True)

    def roots(self) -> list[str]:
        return list(
            dict.fromkeys(os.path.realpath(r) for r in [str(self.worktree), *self._roots()])
        )

    # ---------------------------------------------------------------- turns

    def turn_for(
        self,
        session_id: str,
        turn_id: str | None = None,
        *,
        client: str | None = None,
        title: str | Callable[[], str] = "",
    ) -> Turn:
        """The turn a call belongs to (quick: the folder is made, the scan runs apart).
        ``title``: a new turn's title, or what makes it (called only if one begins)."""
        with self._lock:
            current = self._open.get(session_id)
            now = time.monotonic()
            if current is not None:
                idle = now - current.last >= self.idle_seconds
                same = current.turn_id == turn_id if turn_id else not idle
                if same:
                    current.last = now
                    return current
            named = title if isinstance(title, str) else title()
            return self.begin(session_id, turn_id or f"turn_{next(_ids)}", named, client=client)

    def begin(
        self,
        session_id: str,
        turn_id: str,
        title: str,
        *,
        client: str | None = None,
        since: float | None = None,
    ) -> Turn:
        """A new turn for ``session_id`` (the one before it ends); the open one when it
        already has this ``turn_id`` (a call that named it came first), now titled.
        ``since``: when the client's message that begins it arrived (wall clock, s), if
        the sidecar may hear of the turn later than its agent starts (at most
        ``SINCE_AT_MOST`` before now): changes made from then on are the turn's."""
        with self._lock:
            current = self._open.get(session_id)
            if current is not None and current.turn_id == turn_id:
                current.title = title or current.title
                if (current.folder / "meta.json").exists():
                    write_json(current.folder / "meta.json", current.meta())
                return current
            previous = self._open.pop(session_id, None)
            turn = self._new(session_id, turn_id, title, client or self.client)
            # Until a file changed from now on is dated after the start (a tick at most):
            # what was written before it, even just before, is not the turn's (``outside``).
            outside.wait_for_file_clock(turn.started_ns)
            if since is not None:
                turn.since = min(turn.started, max(since, turn.started - SINCE_AT_MOST))
            self._open[session_id] = turn
            self._sessions.add(session_id)
            if self.watching_outside:
                turn._scan = threading.Thread(
                    target=self._scan_start, args=(turn,), name="toolhost-scan", daemon=True
                )
                turn._scan.start()
            if previous is not None:  # closed by this turn's first scan: the same edge
                self._end_later(previous, turn)
            return turn

    def _new(self, session_id: str, turn_id: str, title: str, client: str, **kw: Any) -> Turn:
        checkpoint = new_checkpoint_id()
        folder = self.store / checkpoint
        ns = kw.setdefault("started_ns", time.time_ns())
        turn = Turn(checkpoint, turn_id, session_id, title, client, folder, ns / 1e9, **kw)
        turn.head = git_head(self.worktree)
        turn._on_written = self.wrote
        turn._on_created = self._changed
        return turn

    def _changed(self) -> None:
        if self.on_changed is not None:
            self.on_changed()

    def _scan_start(self, turn: Turn) -> None:
        # Exact at the turn's own start (``begin`` waited for the file clock); a client's
        # ``since`` is not waited for: an agent acts on a prompt well after a tick.
        since_ns = int(turn.since * 1e9) if turn.since is not None else turn.started_ns
        try:
            turn.baseline = self.baseline().scan(self.worktree, since_ns=since_ns)
        except Exception:  # the turn goes on; only its outside changes go unseen
            log.exception("the scan at the start of a turn failed")

    def baseline(self) -> outside.Baseline:
        """The outside scans' state, kept in memory between turns."""
        with self._lock:
            if self._baseline is None:
                self._baseline = outside.Baseline(self.store)
            return self._baseline

    def end(self, session_id: str, turn_id: str | None = None, *, offer: bool = True) -> str | None:
        """End the session's turn (only if it is ``turn_id``, when given; blocking: hashes
        and scans); the checkpoint id when it kept one. ``offer=False``: the caller
        reviews its outside changes (``on_outside`` is not told)."""
        with self._lock:
            turn = self._open.get(session_id)
            if turn is None or (turn_id is not None and turn.turn_id != turn_id):
                return None
            del self._open[session_id]
        self._finalize(turn, offer=offer)
        return turn.id if (turn.folder / "summary.json").exists() else None

    def end_all(self) -> None:
        with self._lock:
            turns = list(self._open.values())
            self._open.clear()
        for turn in turns:
            self._finalize(turn)

    def _end_later(self, turn: Turn, following: Turn) -> None:
        ending = threading.Thread(target=self._finalize, args=(turn, True, following))
        ending.daemon = True
        self._ending.setdefault(turn.session_id, []).append(ending)
        ending.start()

    def _ended(self, session_id: str) -> None:
        """Until the session's turns ended by the next one have their summaries."""
        with self._lock:
            ending = self._ending.pop(session_id, [])
        for thread in ending:
            if thread is not threading.current_thread():
                thread.join()

    def _finalize(self, turn: Turn, offer: bool = True, following: Turn | None = None) -> None:
        with self._store_lock():
            try:
                self._summarize(turn, offer, following)
            except Exception:
                log.exception("the summary of checkpoint %s failed", turn.id)
            self.prune()

    def _summarize(self, turn: Turn, offer: bool, following: Turn | None = None) -> None:
        store, roots = self.store, self.roots()
        changes = merge(turn.folder, store, roots)
        detach_links(changes, store)
        ours = {c.path for c in changes}
        found = self._outside(turn, ours, following) if self.watching_outside else []
        if not changes and not found and turn.kind == "turn":
            shutil.rmtree(turn.folder, ignore_errors=True)  # nothing changed: no checkpoint
            return
        if not (turn.folder / "meta.json").exists():  # only outside changes
            turn.folder.mkdir(parents=True, exist_ok=True)
            write_json(turn.folder / "meta.json", turn.meta())
        head = git_head(self.worktree)
        write_json(
            turn.folder / "summary.json",
            {
                "files": [c.to_json() for c in changes],
                "outside": [c.to_json() for c in found],
                "git": {"before": turn.head, "after": head} if head != turn.head else None,
                "ended": time.time(),
            },
        )
        self._changed()
        if found and offer and self.on_outside is not None:
            with self._lock:  # a restore leaves them until the person has answered
                self._reviewing.add(turn.id)
            self.on_outside(turn.id, turn.session_id)

    def _asked(self, checkpoint_id: str) -> set[str]:
        if checkpoint_id not in self._reviewing:
            return set()
        return {c.path for c in self.outside_changes(checkpoint_id)}

    def reviewed(self, checkpoint_id: str) -> None:
        """The review of the checkpoint's outside changes is over (answered or not)."""
        with self._lock:
            self._reviewing.discard(checkpoint_id)

    def _outside(self, turn: Turn, ours: set[str], following: Turn | None) -> list[PathChange]:
        if turn._scan is not None:
            turn._scan.join()
        if turn.baseline is None:
            return []
        if following is not None and following._scan is not None:
            following._scan.join()
        edge = following.baseline if following is not None else None
        baseline = self.baseline()
        after = edge if edge is not None else baseline.scan(self.worktree)

        def not_outside(path: str, now: State) -> bool:  # toolhost's, or the person's save
            if path in ours or (now.kind == "file" and self._by_person(path, now.sha)):
                return True
            return self._by_toolhost(path, now)  # a restore or a review wrote it

        return outside.found_in_turn(turn.baseline, after, baseline, not_outside)

    # ---------------------------------------------------------------- who wrote what

    def saved(self, path: str) -> None:
        """The person saved ``path`` in the editor (``textDocument/didSave``)."""
        with contextlib.suppress(OSError):
            sha = digest_file(path)
            with self._lock:
                self._saves.setdefault(os.path.realpath(path), set()).add(sha)

    def wrote(self, paths: Iterable[Path], known: Mapping[Path, str] | None = None) -> None:
        """What ``paths`` hold is toolhost's writes (``known``: sha256s its journal took)."""
        for path in paths:
            try:
                sha = (known or {}).get(path) or digest_file(path)
            except FileNotFoundError:
                sha = "absent"
            except OSError:
                continue
            with self._lock:
                self._writes.setdefault(os.path.realpath(path), set()).add(sha)

    def _by_person(self, path: str, sha: str) -> bool:
        with self._lock:
            return sha in self._saves.get(path, set()) and sha not in self._writes.get(path, set())

    def _by_toolhost(self, path: str, now: State) -> bool:
        mark = now.sha if now.kind == "file" else now.kind
        with self._lock:
            return mark in self._writes.get(path, set())

    def _saved_by_person(self) -> dict[str, set[str]]:
        with self._lock:
            return {p: s - self._writes.get(p, set()) for p, s in self._saves.items()}

    # ---------------------------------------------------------------- listing

    def entries(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every checkpoint of the worktree (of one session), oldest first."""
        store, roots = self.store, self.roots()
        with self._lock:
            open_ids = {t.id for t in self._open.values()}
            watching = {t.id for t in self._open.values() if t.baseline is not None}
        found = []
        for folder in self._folders():
            meta = read_json(folder / "meta.json")
            if not isinstance(meta, dict) or (session_id and meta.get("sessionID") != session_id):
                continue
            summary = read_json(folder / "summary.json")
            if isinstance(summary, dict):
                files = [PathChange.from_json(f) for f in summary.get("files", [])]
                away = [PathChange.from_json(f) for f in summary.get("outside", [])]
                git = summary.get("git")
            else:  # still running (here or in another toolhost), or its toolhost died
                files, away, git = merge(folder, store, roots), [], None
                if not files:
                    continue
            found.append(
                {
                    "id": meta["id"],
                    "turnID": meta.get("turnID"),
                    "sessionID": meta.get("sessionID"),
                    "title": meta.get("title") or "",
                    "time": iso_time(float(meta.get("time", 0))),
                    "client": meta.get("client") or "unknown",
                    "kind": meta.get("kind", "turn"),
                    "restores": meta.get("restores"),
                    "open": meta["id"] in open_ids or not isinstance(summary, dict),
                    "files": [self._file(c) for c in files],
                    "outside": [self._file(c) for c in away],
                    **({"git": git} if git else {}),
                    # An open turn's changes outside toolhost are seen from its first scan.
                    **({"watching": meta["id"] in watching} if meta["id"] in open_ids else {}),
                }
            )
        return found

    def _file(self, change: PathChange) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.display(change.path),
            "action": change.action,
            "by": change.by,
        }
        if change.before.kind == "unknown":
            out["undoable"] = False
        return out

    def display(self, path: str) -> str:
        root = str(self.worktree)
        return path[len(root) + 1 :] if path.startswith(root + "/") else path

    def _folders(self) -> list[Path]:
        try:
            folders = [p for p in self.store.iterdir() if p.name.startswith("chk_")]
        except FileNotFoundError:
            return []
        return sorted(folders, key=lambda p: p.name)

    def diff_texts(self, checkpoint_id: str, path: str) -> tuple[bytes | None, bytes | None]:
        """(before, now) bytes of one file of a checkpoint, for a diff preview."""
        real = self._absolute(path)
        for change in self._changes(self.store / checkpoint_id, outside_too=True):
            if change.path == real:
                before = None
                if change.before.blob:
                    before = (self.store / change.before.blob).read_bytes()
                now = Path(real).read_bytes() if os.path.isfile(real) else None
                return before, now
        raise KeyError(path)

    def _absolute(self, path: str) -> str:
        return path if os.path.isabs(path) else str(self.worktree / path)

    def _changes(self, folder: Path, *, outside_too: bool) -> list[PathChange]:
        summary = read_json(folder / "summary.json")
        if isinstance(summary, dict):
            files = [PathChange.from_json(f) for f in summary.get("files", [])]
            if outside_too:
                files += [PathChange.from_json(f) for f in summary.get("outside", [])]
            return [c for c in files if c.before.kind != "unknown"]
        return merge(folder, self.store, self.roots())

    # ---------------------------------------------------------------- after the fact

    def outside_changes(self, checkpoint_id: str) -> list[PathChange]:
        summary = read_json(self.store / checkpoint_id / "summary.json")
        if not isinstance(summary, dict):
            return []
        return [PathChange.from_json(f) for f in summary.get("outside", [])]

    def keep_outside(self, checkpoint_id: str, paths: Iterable[str]) -> None:
        """The person keeps these outside changes: the checkpoint no longer undoes them."""
        kept = {self._absolute(p) for p in paths}
        with self._store_lock():
            file = self.store / checkpoint_id / "summary.json"
            summary = read_json(file)
            if isinstance(summary, dict):
                summary["outside"] = [f for f in summary["outside"] if f["path"] not in kept]
                write_json(file, summary)

    # ---------------------------------------------------------------- restoring

    def restore(
        self,
        checkpoint_id: str,
        *,
        dry_run: bool = False,
        force: Iterable[str] = (),
        paths: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """Put back what ``checkpoint_id`` and the later checkpoints of its session
        changed: ``{restored, skipped: [{path, reason}], undoID}`` (paths as shown).
        ``paths``: only these (the after-the-fact review's undo of some files)."""
        from tools.checkpoints import restore  # imported when a person undoes a turn

        store, forced = self.store, {self._absolute(p) for p in force}
        meta = read_json(store / checkpoint_id / "meta.json")
        if not isinstance(meta, dict):
            raise KeyError(checkpoint_id)
        session = str(meta.get("sessionID"))
        self.end(session)  # its turn is over: what it did is fixed now
        self._ended(session)
        with self._store_lock():
            chain = [
                f for f in self._folders() if f.name >= checkpoint_id and session_of(f) == session
            ]
            with self._lock:  # outside changes the person is still being asked about
                held = {f.name: self._asked(f.name) - forced for f in chain}
            wanted = None if paths is None else {self._absolute(p) for p in paths}
            plan = restore.plan_chain(
                chain, store, self.roots(), held, wanted, forced, self._saved_by_person()
            )
            skipped = [{**s, "path": self.display(s["path"])} for s in plan.skipped]
            if dry_run or not plan.ops:
                shown = [self.display(op.path) for op in restore.ordered(plan.ops)]
                answer: dict[str, Any] = {"restored": shown, "skipped": skipped, "undoID": None}
                return {**answer, "dryRun": dry_run}
            undo = self._new(
                session,
                f"undo_{checkpoint_id}",
                f"Undo of {meta.get('title') or checkpoint_id}",
                self.client,
                kind="restore",
                restores=checkpoint_id,
            )
            undo.folder.mkdir(parents=True)
            write_json(undo.folder / "meta.json", undo.meta())
            lock = restore.begin(undo.folder, plan.ops)
            try:
                restored, failed = restore.apply(plan.ops, store)
            finally:
                restore.finish(undo.folder, lock)
            self.wrote(Path(p) for p in restored)
            self._summarize_restore(undo)
        return {
            "restored": [self.display(p) for p in restored],
            "skipped": skipped + [{**f, "path": self.display(f["path"])} for f in failed],
            "undoID": undo.id,
        }

    def _summarize_restore(self, undo: Turn) -> None:
        changes = merge(undo.folder, self.store, self.roots())
        detach_links(changes, self.store)
        write_json(
            undo.folder / "summary.json",
            {"files": [c.to_json() for c in changes], "outside": [], "ended": time.time()},
        )

    def last(self, session_id: str | None = None) -> str | None:
        """The newest checkpoint's id (of one session): what "undo" undoes."""
        with self._lock:
            sessions = [session_id] if session_id else list(self._open)
        for session in sessions:
            self.end(session)
        listed = self.entries(session_id)
        return listed[-1]["id"] if listed else None

    # ---------------------------------------------------------------- retention

    def prune(self, now: float | None = None) -> list[str]:
        """Old and oversized checkpoints removed (``tools.checkpoints.retention``)."""
        from tools.checkpoints.retention import Limits, prune  # at a turn's end, never sooner

        limits = Limits(self.max_age_days, self.max_bytes, frozenset(self._sessions))
        return prune(self._folders(), limits, self.baseline(), now)

    @contextlib.contextmanager
    def _store_lock(self) -> Any:
        """One writer of the worktree's checkpoints at a time, across processes
        (the sidecar and ``toolhost undo``)."""
        fd = os.open(self.store / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
