"""Protected paths that do not exist yet, masked for the commands that run meanwhile.

A read-only bind mount needs something to bind onto, and a folder writable for a
command lets it create any name in it: so without a mask, a command could create a
missing ``.vscode/tasks.json`` (``runOn: folderOpen``), ``.nvim.lua`` or
``.git/commondir`` (git then reads its config from a folder of the agent's).  For
each such path the supervisor creates a placeholder before the command starts and
binds it read-only in the command's mount namespace: an empty folder, or for
``commondir`` a file holding ``.`` (git reads it as "the common dir is this one",
which it already is).  The placeholder is removed once no command that uses it is
left running (a command that leaves processes behind keeps it until the sidecar
ends); a placeholder someone filled meanwhile (outside the sandbox) is left alone.

Where the guard on new names holds (``creations``: the project and the other guarded
folders), a missing path there gets no placeholder: the supervisor refuses to make the
name (``Plan.unmade``), so nothing comes and goes in the user's file explorer. The git
dirs' names (``commondir``, ``hooks``, ``info``), bubblewrap, and a kernel without
seccomp keep the placeholders.
"""

from __future__ import annotations

import contextlib
import os

# The missing protected paths that are masked, by name, and a placeholder file's text
# (the rest are folders).  Config files toolhost reads are not masked: a new one that
# loosens anything waits for a person (``tools.config.loosening``).
# The other agents' project config: Claude Code's MCP servers (.mcp.json), hooks,
# commands and agents (.claude), Codex's config and notify command (.codex), the
# skills agents follow (.agents), JetBrains' run configurations (.idea). Protected
# for the file tools too (``tools.permission.protected``).
AGENT_CONFIG = (".mcp.json", ".claude", ".codex", ".agents", ".idea")
MASKED_NAMES = frozenset(
    {".vscode", ".nvim.lua", ".nvimrc", ".exrc", "commondir", "hooks", "info", *AGENT_CONFIG}
)
FILE_TEXT = {"commondir": b".\n"}


def to_mask(paths: list[str]) -> list[str]:
    """The missing paths among ``paths`` that get a placeholder (their folder exists)."""
    found = []
    for path in paths:
        name = os.path.basename(path)
        if name in MASKED_NAMES and not os.path.lexists(path):
            parent = os.path.realpath(os.path.dirname(path))
            if os.path.isdir(parent):
                found.append(os.path.join(parent, name))
    return list(dict.fromkeys(found))


class Placeholders:
    """The placeholders the supervisor made, each with the calls that use it."""

    def __init__(self) -> None:
        self.users: dict[str, set[int]] = {}

    def take(self, call_id: int, paths: list[str]) -> list[str]:
        """Make (or share) a placeholder for each path; the ones now in place."""
        held = []
        for path in paths:
            if path in self.users:
                self.users[path].add(call_id)
            elif not _create(path):
                continue  # it appeared meanwhile, or its folder cannot be written
            else:
                self.users[path] = {call_id}
            held.append(path)
        return held

    def release(self, call_id: int) -> None:
        for path, users in list(self.users.items()):
            users.discard(call_id)
            if not users:
                del self.users[path]
                _remove(path)

    def release_all(self) -> None:
        for path in list(self.users):
            _remove(path)
        self.users.clear()


def _create(path: str) -> bool:
    text = FILE_TEXT.get(os.path.basename(path))
    try:
        if text is None:
            os.mkdir(path, 0o755)
            return True
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(text)
    return True


def _remove(path: str) -> None:
    text = FILE_TEXT.get(os.path.basename(path))
    with contextlib.suppress(OSError):
        if text is None:
            os.rmdir(path)  # only while it is still empty
            return
        with open(path, "rb") as handle:
            if handle.read(len(text) + 1) != text:
                return  # someone wrote it meanwhile: theirs
        os.unlink(path)
