"""What the sandbox stopped, read back from a command's output, in words for the model.

The kernel does not tell the sidecar which write it refused (Landlock's audit
records need privileges to read); the command's own error messages do. A line
that reports EACCES, EROFS, EPERM or EBUSY (in any of the usual spellings:
coreutils, bash, Python, Node, Perl, git) is searched for the paths it names, and
a path counts when the plan would refuse writing it: outside every writable path,
or inside a protected one. A message that names no path is missed; the note is a
help, the kernel is the boundary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tools.bash.sandbox.plan import Plan

MAX_NOTED = 5

_REFUSED = re.compile(
    r"permission denied|read-only file system|operation not permitted|"
    r"device or resource busy|\bE(?:ACCES|ROFS|PERM|BUSY)\b",
    re.IGNORECASE,
)
_NETWORK = re.compile(
    r"network is unreachable|could not resolve|temporary failure in name resolution|"
    r"name or service not known|couldn't connect to server|failed to establish a new "
    r"connection|\bE(?:NETUNREACH|AI_AGAIN|NOTFOUND)\b|getaddrinfo",
    re.IGNORECASE,
)
_PROGRAM = re.compile(r"^\s*[^\s:'\"]+: (?:line \d+: )?")
_QUOTED = re.compile(r"'([^'\n]+)'|\"([^\"\n]+)\"|‘([^’\n]+)’|`([^'`\n]+)'")
_BARE = re.compile(r"(?<![\w.~-])((?:~|\.{1,2})?/[^\s:'\"`,;()\[\]]+|\.[\w.-]*/[^\s:'\"`,;()]*)")
_BEFORE_ERROR = re.compile(r"(?:^|\s)([^\s:'\"]+): (?=" + _REFUSED.pattern + ")", re.IGNORECASE)


@dataclass(frozen=True)
class Blocked:
    path: str
    kind: Literal["outside", "protected"]


def find(
    output: str, plan: Plan, cwd: Path, refused: Sequence[dict[str, str]] = ()
) -> list[Blocked]:
    """The paths the plan refused: the missing protected paths the supervisor refused to
    make (``refused``, from ``creations``), then those the output says could not be
    written, in order."""
    if "fs-write" not in plan.enforced:
        return []
    found = [Blocked(r["path"], "protected") for r in refused if r.get("kind") == "protected"]
    for line in output.splitlines():
        if not _REFUSED.search(line):
            continue
        for word in _candidates(line):
            path = os.path.realpath(os.path.join(cwd, os.path.expanduser(word)))
            kind = _refusal(path, plan)
            if kind is not None and all(b.path != path for b in found):
                found.append(Blocked(path, kind))
    return found


def network_refused(output: str, plan: Plan) -> bool:
    return "network" in plan.enforced and bool(_NETWORK.search(output))


def _candidates(line: str) -> list[str]:
    rest = _PROGRAM.sub("", line, count=1)
    words = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(rest)]
    unquoted = _QUOTED.sub(" ", rest)
    words += _BARE.findall(unquoted)
    words += _BEFORE_ERROR.findall(unquoted)
    return [w for w in dict.fromkeys(words) if w and not w.startswith("-")]


# Another process's files (/proc/<pid>/environ, mem, cwd) are refused to a command by
# Landlock's ptrace rule, for reading too: never a folder to offer a person.
_KERNEL_FILES = ("/proc", "/sys")


def _refusal(path: str, plan: Plan) -> Literal["outside", "protected"] | None:
    if any(_inside(path, p) for p in _KERNEL_FILES):
        return None
    if any(_inside(path, p) for p in [*plan.protected, *plan.masked, *plan.unmade]):
        return "protected"
    allowed = [*plan.writable, *plan.devices]
    if any(_inside(path, p) for p in allowed):
        return None
    return "outside"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def directory_to_allow(path: str) -> str | None:
    """The directory an "allow writing" ask offers for ``path``: the nearest existing
    directory holding it (never the root of the filesystem)."""
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    while directory != "/" and not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    return None if directory == "/" else directory


def notes(blocked: list[Blocked], network: bool, plan: Plan) -> list[str]:
    """The model-facing sentences, one per stopped path (up to MAX_NOTED), and the network."""
    lines: list[str] = []
    outside = [b.path for b in blocked if b.kind == "outside"]
    protected = [b.path for b in blocked if b.kind == "protected"]
    for path in outside[:MAX_NOTED]:
        lines.append(
            f"The command tried to write {path}, outside the folders commands may write to "
            "(the project, the configured allowed_dirs and sandbox.writable folders, the "
            "package caches and a private TMPDIR), and the sandbox stopped it. Write inside "
            "the project or in $TMPDIR instead, or ask the user to allow that folder."
        )
    for path in protected[:MAX_NOTED]:
        lines.append(
            f"The command tried to write {path}, which commands may not change (git hooks "
            "and config, the project's OpenCode/toolhost config, editor settings and other "
            "agents' config stay read-only to them), and the sandbox stopped it. If it must "
            "change, use the edit or write tool, whose changes the user reviews."
        )
    hidden = len(outside) - MAX_NOTED + max(0, len(protected) - MAX_NOTED)
    if hidden > 0:
        lines.append(f"({hidden} more paths were stopped the same way.)")
    if network:
        lines.append(
            "The network is off for commands (sandbox.network: deny), loopback included, "
            "so a connection or name lookup in the output failed for that reason."
        )
    return lines
