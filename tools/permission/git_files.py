"""The files that decide which config and hooks git uses, for every repository in a project.

git obeys more than ``.git/config`` and ``.git/hooks``: ``commondir`` (and a linked
worktree's ``gitdir:`` file) say where the shared git dir is, ``config.worktree``
adds config under ``extensions.worktreeConfig``, ``info/`` holds attributes,
``include.path`` pulls in another config file, ``core.hooksPath`` moves the hooks
(``.husky/_``: husky's hooks run the scripts beside them in ``.husky``), and every
repository nested in the project (or a submodule's git dir under ``.git/modules``)
has all of these again.  Whoever can write one can have the editor's next ``git
status`` run a command outside every sandbox (``core.fsmonitor``).  The file tools
ask for every path under a ``.git`` and for these (``tools.permission.protected``);
the bash sandbox keeps the ones that exist read-only and masks some missing ones
(``tools.bash.sandbox.settings``, ``masks``).

Nested repositories are found by walking the project, skipping the folders tools
fill (``node_modules``, virtual environments, caches), at most ``MAX_DEPTH`` deep
and ``MAX_FOLDERS`` folders: VS Code's git looks no deeper by default.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

# In a git dir, what decides which config, hooks and common dir git uses.
IN_GIT_DIR = ("config", "hooks", "commondir", "info", "config.worktree")
# In each linked worktree's own git dir (``.git/worktrees/<name>``).
IN_WORKTREE_DIR = ("commondir", "config.worktree", "gitdir", "hooks", "config", "info")
SKIPPED = frozenset(
    {"node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache"}
    | {".pytest_cache", ".tox", ".nox", "target", ".gradle", ".cache"}
)
MAX_DEPTH = 6
MAX_FOLDERS = 5000
GIT_SECONDS = 2.0


@dataclass(frozen=True)
class _Folder:
    """What the walk learnt of one folder, valid while its ctime is ``ctime_ns``."""

    ctime_ns: int
    has_git: bool
    subfolders: tuple[str, ...]


# Folder -> what it held when last listed. Every file tool call and bash command asks
# for the repositories, and listing a 100k-file project takes ~100 ms; a folder whose
# ctime did not change since has not gained or lost an entry (ctime, unlike mtime,
# cannot be set back by a process), so one stat stands for its listing.
_listed: dict[str, _Folder] = {}
# Timestamps come from a coarse clock: a change in the same tick as a listing can keep
# the ctime it saw. A folder changed this recently is listed again next time (git's
# "racily clean" rule).
_RACY_NS = 100_000_000


def _folder(path: str) -> _Folder | None:
    try:
        ctime_ns = os.stat(path, follow_symlinks=False).st_ctime_ns
    except OSError:
        _listed.pop(path, None)
        return None
    known = _listed.get(path)
    if known is not None and known.ctime_ns == ctime_ns:
        return known
    listed_at = time.time_ns()
    has_git, subfolders = False, []
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in entries:
            if entry.name == ".git":
                has_git = True
            elif entry.name not in SKIPPED and entry.is_dir(follow_symlinks=False):
                subfolders.append(entry.path)
    folder = _Folder(ctime_ns, has_git, tuple(subfolders))
    if ctime_ns < listed_at - _RACY_NS:
        _listed[path] = folder
    else:
        _listed.pop(path, None)
    return folder


def repositories(root: str) -> list[str]:
    """Every ``.git`` (folder, or ``gitdir:`` file) at ``root`` and in the folders below."""
    found: list[str] = []
    pending, seen = [(root, 0)], 0
    while pending and seen <= MAX_FOLDERS:
        path, depth = pending.pop()
        folder = _folder(path)
        if folder is None:
            continue
        if folder.has_git:
            found.append(os.path.join(path, ".git"))
        if depth < MAX_DEPTH:
            seen += len(folder.subfolders)
            pending.extend((sub, depth + 1) for sub in folder.subfolders)
    return found


def git_dirs(dot_git: str) -> list[str]:
    """The git dirs a ``.git`` stands for: itself, or the one its ``gitdir:`` file
    names, and the common dir that one's ``commondir`` names."""
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        found = [dot_git]
    else:
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as handle:
                text = handle.read(4096)
        except OSError:
            return []
        if not text.startswith("gitdir:"):
            return []
        base = os.path.dirname(dot_git)
        found = [os.path.normpath(os.path.join(base, text.removeprefix("gitdir:").strip()))]
    try:
        with open(os.path.join(found[0], "commondir"), encoding="utf-8") as handle:
            common = handle.read(4096).strip()
        found.append(os.path.normpath(os.path.join(found[0], common)))
    except OSError:
        pass
    return found


def control_paths(git_dir: str) -> list[str]:
    """The paths in ``git_dir`` that decide what git runs and obeys (existing or not)."""
    found = [os.path.join(git_dir, name) for name in IN_GIT_DIR]
    for linked in sorted(glob.glob(os.path.join(glob.escape(git_dir), "worktrees", "*"))):
        found += [os.path.join(linked, name) for name in IN_WORKTREE_DIR]
    for module in submodule_git_dirs(git_dir):
        found += [os.path.join(module, name) for name in IN_GIT_DIR]
    return found


def submodule_git_dirs(git_dir: str) -> list[str]:
    """The git dirs under ``modules/`` (a submodule named ``a/b`` is ``modules/a/b``;
    a nested one's are in its own ``modules/``), never walking into their objects."""
    found: list[str] = []
    pending = [os.path.join(git_dir, "modules")]
    while pending and len(found) < MAX_FOLDERS:
        folder = pending.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if os.path.isfile(os.path.join(entry.path, "HEAD")):
                    found.append(entry.path)
                    pending.append(os.path.join(entry.path, "modules"))
                else:
                    pending.append(entry.path)  # a name with a slash in it
    return sorted(found)


def hooks_path(work_tree: str) -> str | None:
    """The hooks folder git really uses in ``work_tree`` (``core.hooksPath`` applied)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        answer = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"],
            cwd=work_tree,
            env=environment,
            capture_output=True,
            text=True,
            timeout=GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = answer.stdout.strip()
    return path if answer.returncode == 0 and os.path.isabs(path) else None


def hook_folders(work_tree: str) -> list[str]:
    """The hooks folder in use, and for a hook manager's generated one (husky's
    ``.husky/_``) the folder of the scripts it runs too."""
    path = hooks_path(work_tree)
    if path is None:
        return []
    found = [path]
    parent = os.path.dirname(path)
    if os.path.basename(parent) == ".husky" or os.path.basename(path) == ".husky":
        found.append(parent if os.path.basename(parent) == ".husky" else path)
    return list(dict.fromkeys(found))


def _may_move_hooks(git_dir: str) -> bool:
    """Could this git dir's config move the hooks (it names ``hooksPath`` or includes
    another file)?  Only then is git asked: the default folder is covered already."""
    for name in ("config", "config.worktree"):
        try:
            with open(os.path.join(git_dir, name), "rb") as handle:
                text = handle.read(1 << 20).lower()
        except OSError:
            continue
        if b"hookspath" in text or b"include" in text:
            return True
    return False


_SECTION = re.compile(r"^\s*\[\s*(include|includeif)\b", re.IGNORECASE)
_OTHER_SECTION = re.compile(r"^\s*\[")
_PATH = re.compile(r'^\s*path\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;#]*))', re.IGNORECASE)


def included_files(config: str) -> list[str]:
    """The files a git config includes (``include.path``, ``includeIf.*.path``), as git
    resolves them: ``~/`` from the home folder, a relative one from the config's folder.
    Those are config too: one in the work tree would be a config the agent can write."""
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            lines = handle.read(1 << 20).splitlines()
    except OSError:
        return []
    found: list[str] = []
    including = False
    for line in lines:
        if _OTHER_SECTION.match(line):
            including = bool(_SECTION.match(line))
            continue
        match = _PATH.match(line) if including else None
        if match is None:
            continue
        value = (match.group(1) if match.group(1) is not None else match.group(2) or "").strip()
        if value:
            value = os.path.expanduser(value)
            found.append(os.path.normpath(os.path.join(os.path.dirname(config), value)))
    return found


def protected_git_paths(root: str, dot_gits: Sequence[str] | None = None) -> list[str]:
    """Everything under ``root`` (and the git dirs its ``gitdir:`` files name) that
    decides which config and hooks git uses: for bash, kept read-only where it exists.
    ``dot_gits``: ``repositories(root)``, when the caller has found them already."""
    found: list[str] = []
    for dot_git in repositories(root) if dot_gits is None else dot_gits:
        if not os.path.isdir(dot_git) or os.path.islink(dot_git):
            found.append(dot_git)  # a gitdir: file names the git dir
        dirs = git_dirs(dot_git)
        for git_dir in dirs:
            found += control_paths(git_dir)
            for name in ("config", "config.worktree"):
                found += included_files(os.path.join(git_dir, name))
        if any(_may_move_hooks(d) for d in dirs):
            found += hook_folders(os.path.dirname(dot_git))
    return list(dict.fromkeys(found))
