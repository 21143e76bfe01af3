"""Config files: where they are, in which order, and how a broken one fails closed.

Sources, later wins:

1. built-in defaults (``tools.permission.default_rules``, applied by the host);
2. the global dir (``tools.config.dirs.global_config_dir``): ``config.json``,
   ``opencode.json``, ``opencode.jsonc``, ``tools.yaml``;
3. the project: ``opencode.jsonc`` / ``opencode.json`` at the worktree root, then in
   ``.opencode/``, then ``.opencode/tools.yaml``;
4. ``initializationOptions.config`` from the editor.

The JSON file order within one directory is OpenCode's (its global dir reads
``opencode.jsonc`` last, its project dirs read ``opencode.json`` last).

A source that cannot be read, parsed or validated is left out entirely and
reported; the config then fails closed (see ``tools.config.fail_closed_rules``).

The server calls ``load_config`` at startup and again whenever a path in
``LoadedConfig.watch`` is created, changed or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.config import jsonc
from tools.config.dirs import global_config_dir
from tools.config.rules import (
    Config,
    ConfigError,
    ConfigLayer,
    ConfigProblem,
    merge,
    read_opencode,
)

GLOBAL_FILES = ("config.json", "opencode.json", "opencode.jsonc", "tools.yaml")
PROJECT_FILES = ("opencode.jsonc", "opencode.json")
PROJECT_DIR_FILES = ("opencode.jsonc", "opencode.json", "tools.yaml")


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    files: tuple[Path, ...]  # the files that existed and were read, in source order
    watch: tuple[Path, ...]  # every path that is read when it exists: watch these

    @property
    def problems(self) -> tuple[ConfigProblem, ...]:
        return self.config.problems

    def notices(self) -> list[str]:
        """One sentence per unusable source, for ``window/showMessage``."""
        by_source: dict[str, list[ConfigProblem]] = {}
        for problem in self.problems:
            by_source.setdefault(problem.source, []).append(problem)
        notices = []
        for found in by_source.values():
            notice = found[0].sentence()
            if len(found) > 1:
                more = len(found) - 1
                notice += f" It has {more} more problem{'s' if more > 1 else ''}: see the log."
            notices.append(notice)
        return notices


def config_paths(worktree: Path) -> list[Path]:
    """Every config file path, lowest precedence first."""
    global_dir = global_config_dir()
    project_dir = worktree / ".opencode"
    return [
        *(global_dir / name for name in GLOBAL_FILES),
        *(worktree / name for name in PROJECT_FILES),
        *(project_dir / name for name in PROJECT_DIR_FILES),
    ]


def load_config(worktree: Path, overrides: Mapping[str, Any] | None = None) -> LoadedConfig:
    """Read every config source for ``worktree``; ``overrides`` is initializationOptions.config."""
    layers: list[ConfigLayer] = []
    problems: list[ConfigProblem] = []
    files: list[Path] = []
    seen: set[str] = set()
    candidates = config_paths(Path(os.path.abspath(worktree)))
    for path in candidates:
        identity = os.path.realpath(path)  # OPENCODE_CONFIG_DIR may be .opencode itself
        if identity in seen or not path.is_file():
            continue
        seen.add(identity)
        files.append(path)
        layer, found = read_file(path)
        if found:
            problems.extend(found)
        else:
            layers.append(layer)
    if overrides is not None:
        layer, errors = read_opencode(overrides)
        if errors:
            problems.extend(_problem(None, error, None) for error in errors)
        else:
            layers.append(layer)
    return LoadedConfig(merge(layers, problems), tuple(files), tuple(candidates))


def read_file(path: Path) -> tuple[ConfigLayer, list[ConfigProblem]]:
    """One config file's layer, or the problems that keep it from being used."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError) as error:
        return ConfigLayer(), [ConfigProblem(path, None, None, f"could not read it: {error}")]
    is_yaml = path.suffix in (".yaml", ".yml")
    if is_yaml:  # PyYAML only for a tools.yaml that exists: ~20 ms of a cold start
        from tools.config.yaml import compose, read_registry
    try:
        parsed = compose(text) if is_yaml else jsonc.parse(text)
    except jsonc.ParseError as error:
        return ConfigLayer(), [ConfigProblem(path, error.line, None, error.message, error.column)]
    layer, errors = (read_registry if is_yaml else read_opencode)(parsed.value)
    return layer, [_problem(path, error, parsed) for error in errors]


def _problem(path: Path | None, error: ConfigError, parsed: jsonc.Parsed | None) -> ConfigProblem:
    line = parsed.line_of(error.path) if parsed else None
    return ConfigProblem(path, line, error.key, error.detail)
