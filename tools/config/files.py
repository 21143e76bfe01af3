"""Config files: where they are, in which order, and how a broken one fails closed.

Sources, later wins:

1. built-in defaults (``tools.permission.defaults.default_rules``, applied by the host);
2. the global dir (``tools.config.dirs.global_config_dir``): ``config.json``,
   ``opencode.json``, ``opencode.jsonc``, ``tools.yaml``;
3. the project: ``opencode.jsonc`` / ``opencode.json`` at the worktree root, then in
   ``.opencode/``, then ``.opencode/tools.yaml``;
4. ``initializationOptions.config`` from the editor.

The JSON file order within one directory is OpenCode's (its global dir reads
``opencode.jsonc`` last, its project dirs read ``opencode.json`` last).

A source that cannot be read, parsed or validated (a syntax error, a wrong type, an
unknown or misspelt key, a key given twice) is left out and reported with its line
and key; the config then fails closed (``tools.config.effective.fail_closed_rules``):
every tool asks, and every denial any source states holds, the broken source's too
as far as they can be read (``tools.config.salvage``).

In a folder that is not trusted (``tools.permission.trust``) the project's files only restrict.

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
from tools.config.effective import Config, ConfigLayer
from tools.config.errors import ConfigError, ConfigProblem, format_key
from tools.config.merge import merge
from tools.config.opencode import read_opencode
from tools.config.salvage import (
    Salvage,
    from_jsonc_text,
    from_opencode_data,
    from_registry_data,
    from_yaml_text,
)

GLOBAL_FILES = ("config.json", "opencode.json", "opencode.jsonc", "tools.yaml")
PROJECT_FILES = ("opencode.jsonc", "opencode.json")
PROJECT_DIR_FILES = ("opencode.jsonc", "opencode.json", "tools.yaml")


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    files: tuple[Path, ...]  # the files that existed and were read, in source order
    watch: tuple[Path, ...]  # every path that is read when it exists: watch these
    # project files of an untrusted folder, and why only their restrictions apply
    ignored: tuple[tuple[Path, str], ...] = ()
    # Parts of a source that were read but not used, one sentence each for a person.
    warnings: tuple[str, ...] = ()

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


def load_config(
    worktree: Path, overrides: Mapping[str, Any] | None = None, *, trusted: bool = True
) -> LoadedConfig:
    """Read every config source for ``worktree``; ``overrides`` is initializationOptions.config.

    ``trusted`` False (``tools.permission.trust``): the project's files are read for what they
    forbid only; they never loosen the user's rules, and every tool but the read-only
    ones asks first.
    """
    root = Path(os.path.abspath(worktree))
    layers: list[ConfigLayer] = []
    restrictions: list[ConfigLayer] = []
    problems: list[ConfigProblem] = []
    salvage = Salvage()
    files: list[Path] = []
    ignored: list[tuple[Path, str]] = []
    warnings: list[str] = []
    seen: set[str] = set()
    candidates = config_paths(root)
    project = set(candidates[len(GLOBAL_FILES) :])
    user_files = {os.path.realpath(global_config_dir() / name) for name in GLOBAL_FILES}
    for path in candidates:
        identity = os.path.realpath(path)  # OPENCODE_CONFIG_DIR may be .opencode itself
        if identity in seen or not path.is_file():
            continue
        seen.add(identity)
        files.append(path)
        layer, found, salvaged = read_file(path)
        if found:
            problems.extend(found)
            salvage.extend(salvaged)
        elif path in project and not trusted:
            restrictions.append(restrictions_of(layer))
            ignored.append((path, UNTRUSTED_FILE))
        else:
            if layer.providers and identity not in user_files:
                warnings.append(project_provider_warning(path, layer.providers))
                layer.providers = {}
            layers.append(layer)
    if overrides is not None:
        layer, errors = read_opencode(overrides)
        if errors:
            problems.extend(_problem(None, error, None) for error in errors)
            salvage.extend(from_opencode_data(overrides))
        else:
            layers.append(layer)
    # An untrusted project's restrictions come last: nothing can loosen them.
    config = merge([*layers, *restrictions], problems, salvage, untrusted=not trusted)
    return LoadedConfig(config, tuple(files), tuple(candidates), tuple(ignored), tuple(warnings))


def project_provider_warning(path: Path, providers: Mapping[str, Any]) -> str:
    """Model endpoints come from the user's own config only: a checked-out project
    could otherwise send the prompts, the files a sub-agent reads and an API key
    taken from the environment to a server of its choosing."""
    names = ", ".join(sorted(providers))
    return (
        f"toolhost: {path} sets provider ({names}); it is not used, because model endpoints "
        "and their API keys are read only from your user config (the global config folder or "
        "the editor's toolhost config). Move the provider entry there to use it."
    )


UNTRUSTED_FILE = (
    "this folder is not trusted, so only what the file forbids applies (its denials and "
    "the tools it switches off); nothing in it allows anything"
)


def restrictions_of(layer: ConfigLayer) -> ConfigLayer:
    """Only what ``layer`` forbids: its deny rules, tools off and denied commands."""
    return ConfigLayer(
        enabled={tool: False for tool, on in layer.enabled.items() if not on},
        rules=[rule for rule in layer.rules if rule.action == "deny"],
        denied_commands=list(layer.denied_commands),
    )


def read_file(path: Path) -> tuple[ConfigLayer, list[ConfigProblem], Salvage]:
    """One config file's layer, or the problems that keep it from being used and what it
    still forbids (``tools.config.salvage``)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeError as error:
        problem = ConfigProblem(path, None, None, f"could not read it: {error}")
        raw = path.read_bytes().decode("utf-8", "replace")
        return ConfigLayer(), [problem], _salvage_text(path, raw)
    except OSError as error:
        return (
            ConfigLayer(),
            [ConfigProblem(path, None, None, f"could not read it: {error}")],
            Salvage(),
        )
    is_yaml = path.suffix in (".yaml", ".yml")
    if is_yaml:  # PyYAML only for a tools.yaml that exists: ~20 ms of a cold start
        from tools.config.yaml import compose, read_registry
    try:
        parsed = compose(text) if is_yaml else jsonc.parse(text)
    except jsonc.ParseError as error:
        problem = ConfigProblem(path, error.line, None, error.message, error.column)
        return ConfigLayer(), [problem], _salvage_text(path, text)
    found = [
        ConfigProblem(
            path,
            line,
            format_key(key),
            f"duplicate key (first given on line {first}); "
            "give each key once, or one of them is silently ignored",
        )
        for key, line, first in parsed.duplicates
    ]
    layer, errors = (read_registry if is_yaml else read_opencode)(parsed.value)
    found += [_problem(path, error, parsed) for error in errors]
    if not found:
        return layer, [], Salvage()
    salvage = _salvage_text(path, text) if not is_yaml else from_registry_data(parsed.value)
    return layer, found, salvage


def _salvage_text(path: Path, text: str) -> Salvage:
    is_yaml = path.suffix in (".yaml", ".yml")
    return from_yaml_text(text) if is_yaml else from_jsonc_text(text)


def _problem(path: Path | None, error: ConfigError, parsed: jsonc.Parsed | None) -> ConfigProblem:
    line = parsed.line_of(error.path) if parsed else None
    return ConfigProblem(path, line, error.key, error.detail)
