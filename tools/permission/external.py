"""The external-directory guard every file tool passes (reference §3.6): a target outside
the project, as written or with its symlinks resolved, asks ``external_directory``.

Two kinds of path are refused before any rule is consulted, so no rule and no answer
can let a tool reach them: a path with a control character (it would show a person
something other than the file it names), and toolhost's own folders (the runtime
folder, whose lock files hold the tokens that let a client run tools and name the
socket a client trusts, and the trust store's folder)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tools.arguments.malformed import control_problem
from tools.config.dirs import OwnFolders, own_folders, relay_runtime_patterns, secret_dirs
from tools.errors import PermissionDeniedError, ToolError
from tools.fsio.openat2 import has_no_symlinks, is_own_real_path
from tools.fsio.paths import control_character, real_under_text

if TYPE_CHECKING:
    from tools.context import ToolContext


async def assert_external_directory(
    ctx: ToolContext,
    target: Path | str | None,
    kind: Literal["file", "directory"] = "file",
    *,
    opened: bool = False,
) -> None:
    """Ask ``external_directory`` for a target outside the project.

    The target must lie inside the directory or the worktree both as written (with
    ``~`` and ``..`` resolved) and with its symlinks resolved (``real``): a link
    inside the project pointing out of it asks, and so does a path that reaches
    the project only through a link outside it. The ask names the directory the
    target really is in (for a new path: under its nearest existing ancestor).

    The real path judged is pinned for the call (``ctx.pins``): its file I/O goes
    there and nowhere else, however the path's links change afterwards.

    ``opened``: the caller holds ``target`` open from an ``openat2`` that followed no link
    (``open_for_reading``), which already proves it is its own real path.
    """
    if target is None:
        return
    # Text, not Paths, unless there is a person to ask: this runs for every file a call
    # touches.
    written_text = os.path.normpath(target)
    control = control_character(written_text)
    if control is not None:
        problem = control_problem(written_text, control)
        raise ToolError(f"The path {problem}.", kind="invalid_arguments")
    folder, name = os.path.split(written_text)
    resolved_text = written_text
    if name:
        if opened or is_own_real_path(written_text):
            # An existing path with no link on it, its name included: one openat2 says so.
            real_folder = folder
        else:
            # The folder resolved once (one with no link on it is its own real path: one
            # openat2, not an lstat per part); the name followed only if it is a link.
            real_folder = folder if has_no_symlinks(folder) else os.path.realpath(folder)
            resolved_text = real_under_text(real_folder, name)
        ctx.pins.pin(folder, real_folder)  # where the name itself lives (a delete)
    # physical: `link/..` is the link target's parent
    ctx.pins.pin(written_text, resolved_text)
    refuse_secret(written_text, resolved_text, ctx.host.own_folders)
    roots = ctx.host.roots  # inside a root: equal to it, or under it (one C-level test each)
    resolved_inside = resolved_text in roots.real or resolved_text.startswith(roots.real_prefixes)
    if resolved_inside and (
        written_text in roots.written or written_text.startswith(roots.written_prefixes)
    ):
        return
    written, resolved = Path(written_text), Path(resolved_text)
    outside = written if resolved_inside else resolved
    directory = outside if kind == "directory" else outside.parent
    glob = f"{directory.as_posix().rstrip('/')}/*"
    await ctx.ask(
        "external_directory",
        [glob],
        [glob],
        {"filepath": str(outside), "parentDir": str(directory)},
    )


def secret_folder(*paths: str, places: OwnFolders | None = None) -> str | None:
    """The toolhost folder (runtime, trust store) one of ``paths`` is in, else None.
    ``places``: toolhost's folders as a host worked them out (``own_folders``), else
    as this process's environment places them now."""
    if places is None:
        places = own_folders()
    for path in paths:  # one C-level test per path and kind: every file tool call asks
        if path in places.folders or path.startswith(places.under_folders):
            return next(f for f in places.folders if path == f or path.startswith(f + "/"))
        if path.startswith(places.relays):  # a relay's, made after this started too
            prefix = next(p for p in places.relays if path.startswith(p))
            return prefix + path[len(prefix) :].split("/", 1)[0]
    return None


def refuse_secret(written: str, resolved: str, places: OwnFolders | None = None) -> None:
    """Refuse a path in toolhost's own folders: no rule or answer may open them.
    ``resolved``: the path's real path (the guard above has resolved it); ``places``:
    the folders as the calling host has them (``own_folders``)."""
    secret = secret_folder(written, resolved, places=places)
    if secret is None:
        return
    raise PermissionDeniedError(
        f"{written} is in {secret}, toolhost's own folder (its lock files hold the tokens "
        "that let a client run tools, and the trust store decides which folders' config "
        "and tools are used). No tool may read or change it, whatever the rules say, and "
        "the user cannot be asked for it: do the task without it."
    )


def secret_exclusions(search: Path | str) -> list[str]:
    """ripgrep globs (for a search run with ``cwd=search``) that leave out every toolhost
    folder below ``search``, so a search of a folder holding one never reads it."""
    found: list[str] = []
    searched = os.path.normpath(search)
    prefixes = [
        base.rstrip("/") + "/" for base in dict.fromkeys((searched, os.path.realpath(searched)))
    ]
    # Listing the relays' folders reads the whole temp folder (hundreds of entries): only
    # a search that could hold one (of the temp folder, or above it) pays for it.
    secrets = secret_dirs(relays=_relays_could_be_below(prefixes))
    for prefix in prefixes:
        for secret in secrets:
            for form in dict.fromkeys((secret, os.path.realpath(secret))):
                if form.startswith(prefix):
                    found.append("--glob=!/" + glob_escape(form[len(prefix) :]))
    return list(dict.fromkeys(found))


def _relays_could_be_below(prefixes: list[str]) -> bool:
    for pattern in relay_runtime_patterns():
        start = pattern.removesuffix("*")  # e.g. /tmp/toolhost-acp-
        parent = os.path.dirname(start)
        for base in dict.fromkeys((parent, os.path.realpath(parent))):
            relay_start = os.path.join(base, os.path.basename(start))
            if any(relay_start.startswith(p) or p.startswith(relay_start) for p in prefixes):
                return True
    return False


def glob_escape(text: str) -> str:
    """``text`` as a ripgrep glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[]{}\\!" else c for c in text)
