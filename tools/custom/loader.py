"""Load every custom tool (files and plugins) into a list of Tools plus what went wrong.

``CustomTools.reload()`` rescans and reloads only what changed: a Python folder is
re-imported when any ``.py`` in it changed (a sibling helper may have), and the
JS/TS host is replaced when any JS/TS file changed (Node and Bun cannot forget a module).
A broken file never stops the others: it becomes a ``LoadProblem``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.custom.discovery import ToolFile, digest, scan, watch_dirs
from tools.custom.naming import LoadError, Named, check_id, tool_id
from tools.custom.plugins import entry_points, fingerprint
from tools.custom.plugins import load as plugin_tools
from tools.custom.plugins import source as plugin_source
from tools.tool import Tool

if TYPE_CHECKING:
    from tools.custom.node_host import NodeHost

log = logging.getLogger("toolhost.custom")


@dataclass(frozen=True)
class LoadProblem:
    file: str  # a path, or ``entry point name = value (package)`` for a plugin
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass
class _Loaded:
    """One source's outcome."""

    tools: list[Named] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)


@dataclass(frozen=True)
class _Candidate:
    named: Named
    source: str
    rank: tuple[int, ...]  # the highest wins a shared id
    layer: int


class CustomTools:
    """The custom tools of one project directory; nothing is read until ``reload``."""

    def __init__(
        self, directory: Path, worktree: Path, *, plugins: bool = True, project: bool = True
    ) -> None:
        self.directory = directory
        self.worktree = worktree
        self.use_plugins = plugins
        # False in an untrusted folder (tools.permission.trust): its own tool files are never
        # imported.
        self.project = project
        self.tools: list[Tool] = []
        self.problems: list[LoadProblem] = []
        self._digests: dict[Path, str | None] | None = None
        self._plugin_print: tuple[Any, ...] | None = None
        self._python: dict[Path, _Loaded] = {}
        self._node_files: dict[Path, _Loaded] = {}
        self._plugins: list[tuple[str, _Loaded]] = []
        self._node: NodeHost | None = None
        self._lock = threading.Lock()  # one reload at a time
        # Once set (hold_changes), the digest each tool file may have to be loaded.
        self._accepted: dict[Path, str | None] | None = None

    def watch_dirs(self) -> list[Path]:
        return watch_dirs(self.directory, self.worktree, self.project)

    def reload(self) -> bool:
        """Rescan; True when any tool file or the plugin list changed (and was reloaded)."""
        with self._lock:
            return self._reload()

    def hold_changes(self) -> None:
        """From now on, load a new or changed tool file only once ``accept`` names it.

        The sidecar calls this after its first load: code that appears on disk later
        (a checkout, a command, an approved write) runs only after a person says so.
        """
        with self._lock:
            self._accepted = dict(self._digests or {})

    def held(self) -> list[Path]:
        """Tool files on disk that are new or changed and not accepted yet."""
        if self._accepted is None:
            return []
        files = scan(self.directory, self.worktree, self.project)
        return [f.path for f in files if self._accepted.get(f.path) != digest(f.path)]

    def accept(self, paths: list[Path]) -> None:
        """Let these files (as they are now) load; ``reload`` then loads them."""
        with self._lock:
            if self._accepted is not None:
                self._accepted.update({path: digest(path) for path in paths})

    def _reload(self) -> bool:
        files = scan(self.directory, self.worktree, self.project)
        digests = {f.path: digest(f.path) for f in files}
        if self._accepted is not None:  # new or changed files wait for acceptance
            files = [f for f in files if self._accepted.get(f.path) == digests[f.path]]
            digests = {f.path: digests[f.path] for f in files}
        eps = entry_points() if self.use_plugins else []
        plugin_print = fingerprint(eps)
        if digests == self._digests and plugin_print == self._plugin_print:
            return False
        previous = self._digests or {}
        self._reload_python([f for f in files if f.is_python], digests, previous)
        self._reload_node([f for f in files if not f.is_python], digests, previous)
        if plugin_print != self._plugin_print:
            self._plugins = [(plugin_source(ep), _load_plugin(ep)) for ep in eps]
        self._digests, self._plugin_print = digests, plugin_print
        self._assemble(files)
        return True

    def _reload_python(
        self,
        files: list[ToolFile],
        digests: dict[Path, str | None],
        previous: dict[Path, str | None],
    ) -> None:
        changed_folders = {
            path.parent
            for path in set(digests) | set(previous)
            if path.suffix == ".py" and digests.get(path) != previous.get(path)
        }
        loaded: dict[Path, _Loaded] = {}
        if changed_folders:  # the Python tool API (pydantic) only where such files are
            from tools.custom.python_loader import forget_folder

            for folder in changed_folders:
                forget_folder(folder)
        for f in files:
            if f.path.parent in changed_folders or f.path not in self._python:
                loaded[f.path] = _load_python(f.path)
            else:
                loaded[f.path] = self._python[f.path]
        self._python = loaded

    def _reload_node(
        self,
        files: list[ToolFile],
        digests: dict[Path, str | None],
        previous: dict[Path, str | None],
    ) -> None:
        paths = [f.path for f in files]
        old = {p for p in previous if p.suffix != ".py"}
        if set(paths) == old and all(digests[p] == previous.get(p) for p in paths):
            return
        if self._node is not None:
            self._node.retire()  # calls in flight finish on the old process
            self._node = None
        self._node_files = self._load_node(paths) if paths else {}

    def _load_node(self, paths: list[Path]) -> dict[Path, _Loaded]:
        # Imported here: only where JS/TS tool files exist.
        from tools.custom.node_channel import HostFailed
        from tools.custom.node_host import NodeHost
        from tools.custom.node_runtime import (
            NodeUnavailable,
            ensure_cache,
            find_runtime,
            needs_cache,
        )

        try:
            runtime = find_runtime()
        except NodeUnavailable as error:
            return {p: _Loaded(problems=[LoadProblem(str(p), str(error))]) for p in paths}
        if runtime.kind == "node":
            log.info("JS/TS custom tools run on %s", runtime.describe())
        cache_note = ""
        if needs_cache(paths, runtime.kind):
            try:
                ensure_cache()
            except NodeUnavailable as error:
                cache_note = f" (installing @opencode-ai/plugin, zod and esbuild failed: {error})"
        self._node = host = NodeHost(runtime, self.directory)
        try:
            answers = host.load(paths)
        except HostFailed as error:
            return {p: _Loaded(problems=[LoadProblem(str(p), str(error))]) for p in paths}
        return {p: _from_answer(host, p, answers[p], cache_note) for p in paths}

    def _assemble(self, files: list[ToolFile]) -> None:
        problems: list[LoadProblem] = []
        candidates: list[_Candidate] = []
        for plugin_rank, (source, loaded) in enumerate(self._plugins):
            problems += loaded.problems
            candidates += [_Candidate(n, source, (-1, 0, -plugin_rank), -1) for n in loaded.tools]
        for order, f in enumerate(files):
            loaded = self._python.get(f.path) or self._node_files.get(f.path) or _Loaded()
            problems += loaded.problems
            # Within a layer, tools/ beats tool/, then the first file by name.
            plural = int(f.path.parent.name == "tools")
            rank = (f.layer, plural, -order)
            candidates += [_Candidate(n, str(f.path), rank, f.layer) for n in loaded.tools]
        winners: dict[str, _Candidate] = {}
        for candidate in sorted(candidates, key=lambda c: c.rank, reverse=True):
            kept = winners.setdefault(candidate.named.id, candidate)
            if kept is candidate:
                continue
            if kept.layer == candidate.layer:
                problems.append(
                    LoadProblem(
                        candidate.source,
                        f"tool {candidate.named.id!r} is also defined by {kept.source}, "
                        "which is the one used",
                    )
                )
            else:
                log.info(
                    "custom tool %s from %s overrides %s",
                    kept.named.id,
                    kept.source,
                    candidate.source,
                )
        for problem in problems:
            if problem not in self.problems:  # each once, not on every reload
                log.warning("custom tool not loaded: %s", problem)
        self.tools = sorted((c.named.tool for c in winners.values()), key=lambda t: t.id)
        self.problems = problems

    def close(self) -> None:
        if self._node is not None:
            self._node.close()
            self._node = None


def _load_python(path: Path) -> _Loaded:
    from tools.custom.python_loader import load_file

    try:
        return _Loaded(tools=load_file(path))
    except LoadError as error:
        return _Loaded(problems=[LoadProblem(str(path), str(error))])
    except Exception as error:  # a bad schema, a bad name: still one file's problem
        return _Loaded(problems=[LoadProblem(str(path), _schema_failure(error))])


def _schema_failure(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "the arguments schema is recursive, which a tool's arguments cannot be"
    return f"{type(error).__name__}: {error}"


def _load_plugin(ep: Any) -> _Loaded:
    source = plugin_source(ep)
    try:
        return _Loaded(tools=plugin_tools(ep))
    except LoadError as error:
        return _Loaded(problems=[LoadProblem(source, str(error))])
    except Exception as error:
        return _Loaded(problems=[LoadProblem(source, _schema_failure(error))])


def _from_answer(host: NodeHost, path: Path, answer: dict[str, Any], cache_note: str) -> _Loaded:
    from tools.custom.node_tools import make_tool

    if answer.get("error"):
        return _Loaded(problems=[LoadProblem(str(path), str(answer["error"]) + cache_note)])
    loaded = _Loaded()
    for problem in answer.get("problems") or []:
        name = tool_id(path.stem, str(problem.get("export")))
        loaded.problems.append(LoadProblem(str(path), f"tool {name!r}: {problem.get('reason')}"))
    for entry in answer.get("tools") or []:
        name = tool_id(path.stem, str(entry["export"]))
        try:
            check_id(name)
            tool = make_tool(
                host, name, path, entry["export"], entry["description"], entry["parameters"]
            )
        except (LoadError, ValueError, KeyError, TypeError) as error:
            loaded.problems.append(LoadProblem(str(path), f"tool {name!r}: {error}"))
            continue
        loaded.tools.append(Named(name, tool))
    return loaded


def load_all(directory: Path, worktree: Path) -> tuple[list[Tool], list[LoadProblem]]:
    """Load once, without hot reload.

    The Node process used for loading is stopped; a JS/TS tool returned here starts
    a fresh one on its first call.
    """
    custom = CustomTools(directory, worktree)
    custom.reload()
    custom.close()
    return custom.tools, custom.problems
