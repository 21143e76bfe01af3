"""From the config and the permission rules to one command's ``Policy``.

Writable: the project (worktree and directory), the YAML ``allowed_dirs``, the
``sandbox.writable`` directories, the package caches (``sandbox.caches``, or
``DEFAULT_CACHES``), every directory an ``external_directory`` rule allows by a
literal pattern (``/data/*``: a person or the config said the agent may use it),
and whatever this call adds (directories approved in its asks). The supervisor
adds the command's private temp directory and the device files.

Protected (read-only even though the project is writable): ``PROTECTED`` below,
in the worktree and in the directory. A linked worktree (``git worktree add``) gets
its git dir and the shared one writable, their hooks and config protected.

Denied for reading: every ``read`` deny rule whose pattern names one file or
directory (``~/.ssh/*``, ``secrets/**``). toolhost's runtime directory (the
sidecar's lock files hold the token that lets a client run tools) is a secret:
hidden where a mount namespace can be made, else denied for reading. A pattern with
other wildcards (``*.env``) cannot be expressed to the kernel: the read tool's
asks still apply, commands are not stopped.

Hidden (where a mount namespace can: covered by an empty directory or
/dev/null): the sockets through which a command could ask a program outside the
sandbox to run something for it (``DEFAULT_HIDDEN``), or ``sandbox.hidden``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.bash.sandbox.plan import MODES, NETWORKS, Mode, Network, Policy
from tools.config.effective import Config
from tools.permission.rules import Rule, expand_home, wildcard_match

# Paths in a project that code outside the sandbox runs or obeys: git hooks and
# config (core.hooksPath, core.fsmonitor, aliases), a linked worktree's .git file
# (it names the git dir), the project's OpenCode/toolhost config and custom tools,
# and editor settings that run tasks or code when the project is opened.
PROTECTED = (
    ".git/hooks",
    ".git/config",
    ".opencode",
    "opencode.json",
    "opencode.jsonc",
    ".vscode",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
)

# Package caches everyday builds write to ($XDG_CACHE_HOME or ~/.cache covers pip,
# uv, go-build, node-gyp, deno, ccache...). Code placed in a cache can run later,
# outside the sandbox, when a build uses it: set `sandbox.caches: []` to close this.
DEFAULT_CACHES = (
    "~/.npm",
    "~/.yarn/berry/cache",
    "~/.pnpm-store",
    "~/.local/share/pnpm/store",
    "~/.bun/install/cache",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.cargo/.package-cache",
    "~/.cargo/.package-cache-mutate",
    "~/go/pkg/mod",
    "~/.m2/repository",
    "~/.gradle/caches",
    "~/.gradle/wrapper/dists",
    "~/.nuget/packages",
)

# Sockets of programs that would run a command unsandboxed if asked: the D-Bus
# session bus and systemd (systemd-run --user), Neovim and VS Code (their remote
# control), tmux, Docker and Podman. Relative to $XDG_RUNTIME_DIR unless absolute.
DEFAULT_HIDDEN = (
    "bus",
    "systemd",
    "nvim.*",
    "vscode-*",
    "docker.sock",
    "podman",
    "/tmp/tmux-{uid}",
    "/run/docker.sock",
    "/var/run/docker.sock",
)

# A pattern that names one path: no wildcard before an optional trailing /* or /**.
_WILDCARDS = frozenset("*?[")


def policy(
    config: Config,
    *,
    worktree: Path,
    directory: Path,
    rules: Sequence[Rule],
    extra_writable: Iterable[str] = (),
) -> Policy:
    settings = config.sandbox
    network: Network = next((n for n in NETWORKS if n == settings.network), "allow")
    roots = _unique([str(worktree), str(directory)])
    writable = [
        *roots,
        *config.allowed_dirs,
        *settings.writable,
        *cache_paths(config),
        *literal_paths(rules, "external_directory", "allow"),
        *extra_writable,
    ]
    protected = [os.path.join(root, name) for root in roots for name in PROTECTED]
    if os.path.isfile(os.path.join(worktree, ".git")):
        protected.append(os.path.join(worktree, ".git"))
        # A linked worktree (git worktree add): git writes its own git dir and the
        # shared one (objects, refs); their hooks and config stay read-only.
        for git_dir in linked_git_dirs(worktree):
            writable.append(git_dir)
            protected += [os.path.join(git_dir, n) for n in ("hooks", "config", "config.worktree")]
    read_denied = [_project_path(p, worktree) for p in literal_paths(rules, "read", "deny")]
    hidden = hidden_paths(settings.hidden)
    return Policy(
        mode=mode(config),
        network=network,
        writable=tuple(_unique(os.path.normpath(p) for p in writable)),
        protected=tuple(_unique(protected)),
        read_denied=tuple(_unique(read_denied)),
        hidden=tuple(_unique(hidden)),
        secrets=(runtime_dir(),),
    )


def cache_paths(config: Config) -> list[str]:
    """The package caches commands may write (``sandbox.caches``, else the defaults)."""
    caches = config.sandbox.caches
    found = caches if caches is not None else (cache_home(), *DEFAULT_CACHES)
    return [os.path.normpath(expand_home(c)) for c in found]


def mode(config: Config) -> Mode:
    return next((m for m in MODES if m == config.sandbox.mode), "auto")


def linked_git_dirs(worktree: Path) -> list[str]:
    """The git dir a linked worktree's ``.git`` file names, and the common dir it shares."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    git_dir = os.path.normpath(os.path.join(worktree, text.removeprefix("gitdir:").strip()))
    found = [git_dir]
    try:
        common = (Path(git_dir) / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return found
    found.append(os.path.normpath(os.path.join(git_dir, common)))
    return found


def literal_paths(rules: Sequence[Rule], permission: str, action: str) -> list[str]:
    """Paths named by the rules of ``permission`` whose last match is ``action``."""
    found: list[str] = []
    for rule in rules:
        if rule.action != action or not wildcard_match(permission, rule.permission):
            continue
        path = _literal(rule.pattern)
        if path is None:
            continue
        last = None
        for other in rules:  # last match wins: a later rule may say otherwise
            if wildcard_match(permission, other.permission) and wildcard_match(
                path + "/x", other.pattern
            ):
                last = other
        if last is None or last.action == action:
            found.append(path)
    return found


def _literal(pattern: str) -> str | None:
    for suffix in ("/**", "/*"):
        if pattern.endswith(suffix):
            pattern = pattern[: -len(suffix)]
            break
    if not pattern or _WILDCARDS & set(pattern):
        return None
    return expand_home(pattern)


def _project_path(path: str, worktree: Path) -> str:
    return path if os.path.isabs(path) else os.path.join(worktree, path)


def cache_home() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")


def runtime_dir() -> str:
    """toolhost's runtime directory (lock files and tokens), as platformdirs finds it."""
    base = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    if not os.path.isdir(base):
        base = f"/tmp/runtime-{os.getuid()}"  # platformdirs' fallback
    return os.path.join(base, "toolhost")


def hidden_paths(configured: Sequence[str] | None) -> list[str]:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    patterns = DEFAULT_HIDDEN if configured is None else configured
    found: list[str] = []
    for pattern in patterns:
        pattern = expand_home(pattern.replace("{uid}", str(os.getuid())))
        if not os.path.isabs(pattern):
            pattern = os.path.join(runtime, pattern)
        found += sorted(glob.glob(pattern)) if _WILDCARDS & set(pattern) else [pattern]
    return found


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
