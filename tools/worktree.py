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

from tools.config.files import LoadedConfig, config_paths, load_config
from tools.config.rules import ConfigProblem, merge
from tools.custom.loader import LoadProblem
from tools.host import ToolHost

log = logging.getLogger("toolhost.worktree")

FAILING_CLOSED = (
    "until the config is fixed, edits, commands and web fetches ask first "
    "(the deny rules of the files that were read still apply)"
)


def read_config(worktree: Path, overrides: Mapping[str, Any] | None = None) -> LoadedConfig:
    """Every config source of ``worktree`` (``overrides``: initializationOptions.config)."""
    try:
        return load_config(worktree, overrides)
    except Exception as error:  # a fault in the reader must not leave the defaults on
        log.exception("reading the config files failed")
        message = f"toolhost could not read its config files ({error})"
        problem = ConfigProblem(worktree, None, None, message)
        return LoadedConfig(merge([], [problem]), (), tuple(config_paths(worktree)))


def reload_custom(host: ToolHost) -> bool:
    """Rescan the custom tools; True when the catalogue changed.  Blocking."""
    try:
        return host.reload_custom()
    except Exception:  # the loader reports each file's faults; this is a fault in it
        log.exception("loading the custom tools failed")
        return False


def open_worktree(directory: Path, **host_options: Any) -> tuple[ToolHost, LoadedConfig]:
    """A ToolHost for ``directory`` with its config files and custom tools loaded."""
    loaded = read_config(directory)
    host = ToolHost(directory, config=loaded.config, **host_options)
    reload_custom(host)
    return host, loaded


@dataclass(frozen=True)
class Problem:
    """A config file or custom tool file that could not be used."""

    kind: Literal["config", "custom"]
    file: str
    message: str
    line: int | None = None
    column: int | None = None
    key: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "custom":
            return {"kind": self.kind, "file": self.file, "message": self.message}
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "key": self.key,
            "message": self.message,
        }


def problems(loaded: LoadedConfig, host: ToolHost) -> list[Problem]:
    found = [
        Problem("config", p.source, p.message, p.line, p.column, p.key) for p in loaded.problems
    ]
    found += [Problem("custom", p.file, p.reason) for p in host.custom_problems]
    return found


def problem_lines(loaded: LoadedConfig, host: ToolHost) -> list[str]:
    """One line per problem, compiler style, for a terminal."""
    lines = [f"config not used: {problem}" for problem in loaded.problems]
    if lines:
        lines.append(FAILING_CLOSED)
    lines += [f"custom tool not loaded: {problem}" for problem in host.custom_problems]
    lines += list(loaded.warnings)
    return lines


def custom_notice(problem: LoadProblem) -> str:
    """One sentence for a person (``window/showMessage``)."""
    return (
        f"toolhost: the custom tool file {problem.file} was not loaded: {problem.reason}. "
        "Every other tool is available."
    )
