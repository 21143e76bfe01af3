"""The after-the-fact review over the editor connection: when a turn ends with files
changed outside toolhost, the editor is asked (``permission/ask`` with
``metadata.kind = "afterTheFact"``) to keep or undo them, per file and per hunk.

An editor that answers no ``permission/ask`` is not asked: the changes stay listed in
``checkpoints/list`` (``outside``) and are undone with their turn. A turn ended by
``turn/end`` on the attach socket (``toolhost acp``) is reviewed by that client instead
(``review``, ``server.attach.listener``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from tools.errors import ToolError

if TYPE_CHECKING:
    from server.client import EditorClient
    from server.options import InitOptions
    from tools.checkpoints.turns import Checkpoints
    from tools.host import ToolHost
    from tools.permission.asks import PermissionReply, PermissionRequest

log = logging.getLogger("toolhost.server")


class Asker(Protocol):
    """Who is asked: the editor's bridge, or a client on the attach socket."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply: ...


def watch(host: ToolHost, options: InitOptions, server: EditorClient) -> None:
    """Offer every turn's outside changes for review once the turn has ended, and tell
    the editor when a checkpoint appears or a turn ends (``checkpoints/changed``)."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    def ended(checkpoint: str, session: str) -> None:  # from a worker thread
        def start() -> None:
            task = loop.create_task(offer(host, options, server, checkpoint, session))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.call_soon_threadsafe(start)

    host.checkpoints.on_outside = ended

    def changed() -> None:  # from any thread: the editor's list of turns is stale
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to tell
            loop.call_soon_threadsafe(server.protocol.notify, "checkpoints/changed", {})

    host.checkpoints.on_changed = changed


async def offer(
    host: ToolHost, options: InitOptions, server: EditorClient, checkpoint: str, session: str
) -> None:
    from server.bridge import LspEditorBridge

    try:
        bridge = LspEditorBridge(server, options)
        done = await review(host.checkpoints, checkpoint, session, bridge)
    finally:  # answered or not: a restore may put these files back from now on
        host.checkpoints.reviewed(checkpoint)
    changed = [*done["undone"], *done["partly"]] if done else []
    if changed:
        uris = [(host.checkpoints.worktree / p).as_uri() for p in changed]
        server.protocol.notify("checkpoints/restored", {"uris": uris})


async def review(
    checkpoints: Checkpoints, checkpoint: str, session: str, asker: Asker
) -> dict[str, list[str]] | None:
    """Ask ``asker`` about the checkpoint's outside changes and apply the answer:
    ``{kept, undone, partly, skipped}``, or None when there were none or nobody could be
    asked (then they stay listed, and are undone with their turn)."""
    # Imported here, at a turn's end: with the diff and the hunks behind it, it is not
    # for a sidecar's start.
    from tools.checkpoints import review as review_files

    files = await asyncio.to_thread(review_files.files_of, checkpoints, checkpoint)
    if not files:
        return None
    request = review_files.ask_for(checkpoints, checkpoint, session, files)
    try:
        reply = await asker.ask_permission(request)
    except ToolError as error:
        log.info("changes outside review left listed in %s: %s", checkpoint, error.message)
        return None
    done = await asyncio.to_thread(review_files.settle, checkpoints, checkpoint, files, reply)
    log.info("after-the-fact review of %s: %s", checkpoint, done)
    return done
