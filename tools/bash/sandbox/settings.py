"""From the config and the permission rules to one command's ``Policy``.

Writable: the project (worktree and directory), the YAML ``allowed_dirs``, the
``sandbox.writable`` directories, the package caches (``sandbox.caches``, or
``DEFAULT_CACHES``), every directory an ``external_directory`` rule allows by a
literal pattern (``/data/*``: a person or the config said the agent may use it),
and whatever this call adds (directories approved in its asks). The supervisor
adds the command's private temp directory and the device files.

Protected (read-only even though the project is writable): ``PROTECTED`` below,
in the worktree and in the directory, and what decides which config and hooks git
uses in every repository there (``tools.permission.git_files``). A linked worktree
(``git worktree add``) gets its git dir and the shared one writable, their hooks,
config and pointers protected.

Denied for reading: every ``read`` deny rule whose pattern names one file or
directory (``~/.ssh/*``, ``secrets/**``). toolhost's runtime directories (the
sidecar's lock files hold the token that lets a client run tools) and the trust
store's folder are secrets: hidden where a mount namespace can be made, else
denied for reading. A pattern with
other wildcards (``*.env``) cannot be expressed to the kernel: the read tool's
asks still apply, commands are not stopped.

Hidden (where a mount namespace can: covered by an empty directory or
/dev/null): the sockets through which a command could ask a program outside the
sandbox to run something for it (``DEFAULT_HIDDEN``), and with them every Unix
socket listening when the command starts (``/proc/net/unix``) that this user's
programs serve (the file is this user's), the display's and the system bus, outside
the writable folders: ssh-agent, gpg-agent, a terminal's or an IDE's remote control,
whatever the list does not name (``listening_sockets``). ``sandbox.hidden`` replaces
both with its own list.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.bash.sandbox.masks import AGENT_CONFIG
from tools.bash.sandbox.plan import MODES, NETWORKS, Mode, Network, Policy
from tools.config.dirs import secret_dirs
from tools.config.effective import Config, NetworkLists
from tools.fsio.listing import matching
from tools.permission.git_files import git_dirs as git_file_dirs
from tools.permission.git_files import protected_git_paths, repositories
from tools.permission.rules import Rule, expand_home, wildcard_match

# Paths in a project that code outside the sandbox runs or obeys: git hooks and
# config (core.hooksPath, core.fsmonitor, aliases), a linked worktree's .git file
# (it names the git dir), the project's OpenCode/toolhost config and custom tools,
# editor settings that run tasks or code when the project is opened, and the other
# agents' project config (their MCP servers, hooks and notify commands run; their
# commands and skills are instructions they follow).
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
    *AGENT_CONFIG,
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
# session bus and systemd (systemd-run --user), the editors' remote control (Neovim,
# VS Code and code-server, Emacs's server), the terminal multiplexers (tmux, screen),
# Docker and Podman. Relative to $XDG_RUNTIME_DIR unless absolute; {tmp} is each
# temp folder (/tmp and $TMPDIR), {uid} and {user} this user. Where the editors put
# them without $XDG_RUNTIME_DIR: Neovim /tmp/nvim.$USER/, VS Code /tmp/vscode-*.sock,
# Emacs /tmp/emacs$UID/.
DEFAULT_HIDDEN = (
    "bus",
    "systemd",
    "nvim.*",
    "vscode-*",
    "code-server*",
    "emacs",
    "docker.sock",
    "podman",
    "{tmp}/nvim.{user}",
    "{tmp}/vscode-*.sock",
    "{tmp}/code-server*.sock",
    "{tmp}/emacs{uid}",
    "{tmp}/tmux-{uid}",
    "{tmp}/screens/S-{user}",
    "/run/screen/S-{user}",
    "/run/docker.sock",
    "/var/run/docker.sock",
)

# Where a command could still have names looked up for it while its network is cut:
# the system resolver's sockets (systemd-resolved's varlink, nscd), the D-Bus system
# bus (resolved's API), avahi (mDNS). Each lookup of `<secret>.evil.com` carries data out.
NETWORK_HIDDEN = (
    "/run/systemd/resolve/io.systemd.Resolve",
    "/run/systemd/resolve/io.systemd.Resolve.Monitor",
    "/run/nscd/socket",
    "/var/run/nscd/socket",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/avahi-daemon/socket",
    "/var/run/avahi-daemon/socket",
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
    repos_allowed: Iterable[str] = (),
) -> Policy:
    settings = config.sandbox
    network = network_mode(config)
    roots = _unique([str(worktree), str(directory)])
    # New names in these are made by the supervisor, never .git (``creations``): all
    # but the package caches (and the linked git dirs, the temp dir: free).
    guarded = [
        *roots,
        *config.allowed_dirs,
        *settings.writable,
        *literal_paths(rules, "external_directory", "allow"),
        *extra_writable,
    ]
    writable = [*guarded, *cache_paths(config)]
    protected = [os.path.join(root, name) for root in roots for name in PROTECTED]
    # Each root's repositories, found once: both lists below need them.
    found = {root: repositories(root) for root in roots}
    # What decides which config and hooks git uses, for every repository in the
    # project (``tools.permission.git_files``): read-only where it exists.
    protected += [p for root in roots for p in protected_git_paths(root, found[root])]
    git_dirs = [d for root in roots for g in found[root] for d in git_file_dirs(g)]
    if os.path.isfile(os.path.join(worktree, ".git")):
        # A linked worktree (git worktree add): git writes its own git dir and the
        # shared one (objects, refs); what decides its config and hooks stays read-only.
        writable += linked_git_dirs(worktree)
    read_denied = [_project_path(p, worktree) for p in literal_paths(rules, "read", "deny")]
    hidden = hidden_paths(settings.hidden)
    secrets = secret_dirs()  # lists the temp folder: once a call
    if settings.hidden is None:
        covered = [*hidden, *secrets]
        hidden += [p for p in listening_sockets(writable) if not _below_any(p, covered)]
    if network != "allow":
        hidden += [p for p in hidden_paths(NETWORK_HIDDEN) if p not in hidden]
    return Policy(
        mode=mode(config),
        network=network,
        writable=tuple(_unique(os.path.normpath(p) for p in writable)),
        protected=tuple(_unique(protected)),
        read_denied=tuple(_unique(read_denied)),
        hidden=tuple(_unique(hidden)),
        secrets=tuple(secrets),
        guarded=tuple(_unique(os.path.normpath(p) for p in guarded)),
        free=tuple(_unique(git_dirs)),
        repos_allowed=tuple([*settings.repositories, *repos_allowed]),
    )


def cache_paths(config: Config) -> list[str]:
    """The package caches commands may write (``sandbox.caches``, else the defaults)."""
    caches = config.sandbox.caches
    found = caches if caches is not None else (cache_home(), *DEFAULT_CACHES)
    return [os.path.normpath(expand_home(c)) for c in found]


def network_mode(config: Config) -> Network:
    """``allow``, ``deny``, or ``domains`` for the lists (``tools.network``)."""
    value = config.sandbox.network
    if isinstance(value, NetworkLists):
        return "domains"
    return next((n for n in NETWORKS if n == value and n != "domains"), "allow")


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


def hidden_paths(configured: Sequence[str] | None) -> list[str]:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    patterns = DEFAULT_HIDDEN if configured is None else configured
    found: list[str] = []
    for written in patterns:
        for pattern in _placeholders_filled(written):
            pattern = expand_home(pattern)
            if not os.path.isabs(pattern):
                pattern = os.path.join(runtime, pattern)
            found += _globbed(pattern) if _WILDCARDS & set(pattern) else [pattern]
    return found


def _globbed(pattern: str) -> list[str]:
    """``sorted(glob(pattern))``; when only its last part has wildcards, from its folder's
    names as last listed, if the folder is unchanged since (``tools.fsio.listing``)."""
    if _WILDCARDS & set(os.path.dirname(pattern)):
        return sorted(glob.glob(pattern))
    return matching(pattern)


# Sockets a command may still reach: the journal (logging) and the name services
# (users, hosts), which only answer questions.
KEPT_SOCKETS = (
    "/dev/log",
    "/run/systemd/journal/",
    "/run/systemd/resolve/",
    "/run/systemd/userdb/",
    "/run/nscd/",
    "/var/run/nscd/",
)
# Served by another user but acting for this one: the display (keystrokes into any
# window) and the system bus (polkit grants the active session's user more).
OTHERS_HIDDEN = ("/tmp/.X11-unix/", "/run/dbus/", "/var/run/dbus/")
_LISTENING = 0x10000  # __SO_ACCEPTCON in /proc/net/unix's Flags


def listening_sockets(writable: Sequence[str]) -> list[str]:
    """The Unix sockets listening on this machine (by path, abstract ones aside) that
    a command must not reach: this user's, the display's and the system bus, outside
    ``writable`` (a server the command's own earlier job runs there stays reachable),
    but for ``KEPT_SOCKETS``."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    roots = [os.path.realpath(w) for w in writable]
    uid = os.getuid()
    found: list[str] = []
    for line in lines:
        if " 00010000 " not in line:  # the common case, cheaply: not listening
            continue
        fields = line.split(None, 7)
        if len(fields) < 8 or not int(fields[3], 16) & _LISTENING or fields[7][0] != "/":
            continue
        path = fields[7]
        if path.startswith(KEPT_SOCKETS) or _below_any(path, roots) or path in found:
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue  # gone, or bound in another mount namespace
        if stat.S_ISSOCK(info.st_mode) and (info.st_uid == uid or path.startswith(OTHERS_HIDDEN)):
            found.append(path)
    return found


def _below_any(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _placeholders_filled(pattern: str) -> list[str]:
    """``pattern`` with ``{uid}``, ``{user}`` and ``{tmp}`` (once per temp folder) filled."""
    import pwd
    import tempfile

    uid = os.getuid()
    filled = pattern.replace("{uid}", str(uid))
    if "{user}" in filled:  # the user database only when asked for
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = os.environ.get("USER", str(uid))
        filled = filled.replace("{user}", user)
    if "{tmp}" not in filled:
        return [filled]
    temps = dict.fromkeys(("/tmp", tempfile.gettempdir()))
    return [filled.replace("{tmp}", base) for base in temps]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
