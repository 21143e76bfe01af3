"""Files that decide what the agent may do: a change to one always asks a person.

Config files (``opencode.json[c]``, ``tools.yaml``), everything under ``.opencode/``
(config, custom tools, plugins), the user's global config dir (its custom tools too),
everything under any ``.git`` in the project and what else decides which config
and hooks git uses (``tools.permission.git_files``: the hooks folder it really uses,
a linked worktree's shared git dir; ``core.hooksPath``, ``core.fsmonitor`` and aliases
run commands), the editors' project settings that run code when a folder opens, the
other agents' project config, and toolhost's own trust store and crash journal.  Writing
any of them would let the agent widen its own permissions or run code outside every
check, so the change pipeline asks for it every time, whatever the rules allow, with a
prompt that says so, and an "always" answer is not remembered for it
(``tools.changes.commit``).

The bash sandbox keeps the project's copies read-only at the kernel level
(``tools.bash.sandbox.settings.PROTECTED``); this list is the file tools' side of
the same promise, and a superset of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tools.bash.sandbox.masks import AGENT_CONFIG
from tools.config.dirs import global_config_dir
from tools.fsio.paths import is_inside
from tools.permission import git_files

if TYPE_CHECKING:
    from tools.context import Host

# Anywhere in the project, by name: the config files OpenCode and toolhost read.
PROTECTED_NAMES = frozenset({"opencode.json", "opencode.jsonc", "tools.yaml"})
# In the project, by path from its root (a folder protects everything under it).
PROTECTED_IN_PROJECT = (
    ".opencode",
    ".git/hooks",
    ".git/config",
    ".vscode",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    *AGENT_CONFIG,
)

ALTERS = (
    "This change alters what the agent may do (its permissions, its tools, or code that "
    'runs on its behalf), so it is asked every time and cannot be allowed with "always".'
)


GIT = "git runs the hooks and obeys the config in .git on the user's behalf"


def protected_roots(host: Host) -> dict[Path, str]:
    """Folders and files protected wherever they are (outside the project too), each
    with why: of git, also the hooks folder it really uses and the git dirs a
    ``gitdir:`` file names."""
    from tools.changes.journal import journal_root
    from tools.permission.trust import store_path

    roots: dict[Path, str] = {
        global_config_dir(): "it is in the user's own config folder (global config and "
        "custom tools)",
        **{
            d: ".opencode holds the project's config and custom tools (code the tools run)"
            if d.name == ".opencode"
            else "it is a folder custom tools are loaded from"
            for d in host.custom_watch_dirs()
        },
        store_path(): "toolhost's own trust store decides which folders' config is used",
        journal_root(): "toolhost's crash journal decides what it undoes on its next start",
    }
    for project in dict.fromkeys((host.worktree, host.directory)):
        for name in PROTECTED_IN_PROJECT:
            roots.setdefault(project / name, _why(name))
        for path in git_files.protected_git_paths(str(project)):
            roots.setdefault(Path(path), GIT)
    return roots


def reason(path: Path, host: Host, roots: dict[Path, str] | None = None) -> str | None:
    """Why a change to ``path`` alters what the agent may do, or None (``roots``:
    ``protected_roots(host)``, when the caller has them)."""
    forms = _forms(path)
    for form in forms:
        inside_project = any(is_inside(form, root) for root in _projects(host))
        if inside_project and form.name in PROTECTED_NAMES:
            return f"{form.name} is a config file that sets the agent's permissions and tools"
        if inside_project and ".git" in form.parts:  # any repository's, nested ones too
            return GIT
    for root, why in (roots if roots is not None else protected_roots(host)).items():
        for root_form in _forms(root):
            if any(is_inside(form, root_form) for form in forms):
                return why
    return None


def _why(name: str) -> str:
    if name.startswith(".git"):
        return GIT
    if name == ".opencode":
        return ".opencode holds the project's config and custom tools (code the tools run)"
    if name in AGENT_CONFIG:
        return (
            f"{name} holds another agent's project config (commands it runs, instructions "
            "it follows)"
        )
    return f"{name} holds editor settings that can run code when the folder is opened"


def _projects(host: Host) -> list[Path]:
    return [form for root in (host.worktree, host.directory) for form in _forms(root)]


def _forms(path: Path) -> list[Path]:
    """The path as written and with its symlinks resolved: either one may be protected."""
    written = Path(os.path.normpath(path))
    real = Path(os.path.realpath(written))
    return [written] if real == written else [written, real]


def protected_changes(paths: Iterable[Path], host: Host) -> dict[Path, str]:
    """The paths among ``paths`` that are protected, each with why."""
    found: dict[Path, str] = {}
    roots = protected_roots(host)
    for path in paths:
        why = reason(path, host, roots)
        if why is not None:
            found[path] = why
    return found
