"""Opening a worktree: its config files, its custom tools, and what could not be used.

The sidecar (``server/state.py``) and the command line (``toolhost list`` / ``run``)
load a worktree the same way through this module; the sidecar also re-reads each
part when the watcher sees a change.  A fault in a reader never leaves the
permissive defaults on: the config then fails closed (``tools.config.rules``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tools.config.errors import ConfigProblem
from tools.config.files import LoadedConfig, config_paths, load_config
from tools.config.merge import merge
from tools.custom.discovery import TOOL_SUFFIXES
from tools.custom.loader import LoadProblem
from tools.host import ToolHost
from tools.permission.trust import Trust, project_files
from tools.truncation import data_dir

log = logging.getLogger("toolhost.worktree")

FAILING_CLOSED = (
    "until the config is fixed, every tool asks first "
    "(every denial the config files state, the broken ones' too, still applies)"
)


def read_config(
    worktree: Path, overrides: Mapping[str, Any] | None = None, *, trusted: bool = True
) -> LoadedConfig:
    """Every config source of ``worktree`` (``overrides``: initializationOptions.config)."""
    try:
        return load_config(worktree, overrides, trusted=trusted)
    except Exception as error:  # a fault in the reader must not leave the defaults on
        log.exception("reading the config files failed")
        message = f"toolhost could not read its config files ({error})"
        problem = ConfigProblem(worktree, None, None, message)
        config = merge([], [problem], untrusted=not trusted)
        return LoadedConfig(config, (), tuple(config_paths(worktree)))


def reload_custom(host: ToolHost) -> bool:
    """Rescan the custom tools; True when the catalogue changed.  Blocking."""
    try:
        return host.reload_custom()
    except Exception:  # the loader reports each file's faults; this is a fault in it
        log.exception("loading the custom tools failed")
        return False


def recover_interrupted_changes() -> list[str]:
    """Roll back file changes a killed toolhost left half done (``tools.changes.journal``).

    Run once at every start, before any tool; one line per file put back or left alone.
    The two recoveries' modules are imported only when a journal of theirs was left:
    nearly every start finds none, and importing them was a sixteenth of ``toolhost list``.
    """
    try:
        report: list[str] = []
        if _left_behind(data_dir() / "journal", "*"):  # tools.changes.journal.journal_root
            from tools.changes import journal

            report += journal.recover()
        # tools.checkpoints.store.checkpoints_root, a store, a checkpoint, restore.JOURNAL
        if _left_behind(data_dir() / "checkpoints", "*/*/restore.json"):
            from tools.checkpoints import restore

            report += restore.recover()
        return report
    except Exception as error:  # recovery must never keep toolhost from starting
        log.exception("recovering interrupted changes failed")
        return [f"could not recover interrupted changes ({error})"]


def _left_behind(folder: Path, pattern: str) -> bool:
    """True when something in ``folder`` matches ``pattern``."""
    return next(folder.glob(pattern), None) is not None


def open_worktree(
    directory: Path, *, trusted: bool = True, **host_options: Any
) -> tuple[ToolHost, LoadedConfig]:
    """A ToolHost for ``directory`` with its config files and custom tools loaded.

    ``trusted`` (``tools.permission.trust.decide``): False reads the project's config for its
    restrictions only and loads none of its tool files.
    """
    loaded = read_config(directory, trusted=trusted)
    host = ToolHost(directory, config=loaded.config, trusted=trusted, **host_options)
    reload_custom(host)
    return host, loaded


@dataclass(frozen=True)
class Problem:
    """A config file or custom tool file that could not be used."""

    kind: Literal["config", "custom", "untrusted"]
    file: str
    message: str
    line: int | None = None
    column: int | None = None
    key: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind != "config":
            return {"kind": self.kind, "file": self.file, "message": self.message}
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "key": self.key,
            "message": self.message,
        }


UNTRUSTED_TOOL = "this folder is not trusted, so its own tool files are not loaded (or run)"


def untrusted_tool_files(host: ToolHost) -> list[Path]:
    """The project's tool files that an untrusted folder does not load."""
    if host.custom.project:
        return []
    return [path for path in project_files(host.worktree) if path.suffix in TOOL_SUFFIXES]


def problems(loaded: LoadedConfig, host: ToolHost) -> list[Problem]:
    found = [
        Problem("config", p.source, p.message, p.line, p.column, p.key) for p in loaded.problems
    ]
    found += [Problem("custom", p.file, p.reason) for p in host.custom_problems]
    found += [Problem("untrusted", str(path), why) for path, why in loaded.ignored]
    found += [
        Problem("untrusted", str(path), UNTRUSTED_TOOL) for path in untrusted_tool_files(host)
    ]
    return found


def problem_lines(loaded: LoadedConfig, host: ToolHost) -> list[str]:
    """One line per problem, compiler style, for a terminal."""
    lines = [f"config not used: {problem}" for problem in loaded.problems]
    if lines:
        lines.append(FAILING_CLOSED)
    lines += [f"custom tool not loaded: {problem}" for problem in host.custom_problems]
    lines += [f"ignored: {path}: {why}" for path, why in loaded.ignored]
    lines += [f"ignored: {path}: {UNTRUSTED_TOOL}" for path in untrusted_tool_files(host)]
    lines += list(loaded.warnings)
    return lines


def untrusted_notice(trust: Trust, others_offered: bool = True) -> str:
    """One sentence for a person: the folder is served restricted, why, and what to do.

    ``others_offered``: whether any tool but the read-only ones is offered; an editor's
    Restricted Mode switches them off, and then they are refused, not asked about."""
    others = (
        "every tool but the read-only ones asks first"
        if others_offered
        else "only the read-only tools are offered (the editor switched the others off)"
    )
    return (
        f"toolhost: this folder is not trusted ({trust.reason}). Its own config only "
        f"restricts, its own tools are not loaded, and {others}."
    )


def custom_notice(problem: LoadProblem) -> str:
    """One sentence for a person (``window/showMessage``)."""
    return (
        f"toolhost: the custom tool file {problem.file} was not loaded: {problem.reason}. "
        "Every other tool is available."
    )
