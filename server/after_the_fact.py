"""The after-the-fact review over the editor connection: when a turn ends with files
changed outside toolhost, the editor is asked (``permission/ask`` with
``metadata.kind = "afterTheFact"``) to keep or undo them, per file and per hunk.

An editor that answers no ``permission/ask`` is not asked: the changes stay listed in
``checkpoints/list`` (``outside``) and are undone with their turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from tools.checkpoints import review
from tools.errors import ToolError

if TYPE_CHECKING:
    from server.client import EditorClient
    from server.options import InitOptions
    from tools.host import ToolHost

log = logging.getLogger("toolhost.server")


def watch(host: ToolHost, options: InitOptions, server: EditorClient) -> None:
    """Offer every turn's outside changes for review once the turn has ended."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    def ended(checkpoint: str, session: str) -> None:  # from a worker thread
        def start() -> None:
            task = loop.create_task(offer(host, options, server, checkpoint, session))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.call_soon_threadsafe(start)

    host.checkpoints.on_outside = ended


async def offer(
    host: ToolHost, options: InitOptions, server: EditorClient, checkpoint: str, session: str
) -> None:
    from server.bridge import LspEditorBridge

    checkpoints = host.checkpoints
    files = await asyncio.to_thread(review.files_of, checkpoints, checkpoint)
    if not files:
        return
    request = review.ask_for(checkpoints, checkpoint, session, files)
    try:
        reply = await LspEditorBridge(server, options).ask_permission(request)
    except ToolError as error:
        log.info("changes outside review left listed in %s: %s", checkpoint, error.message)
        return
    done = await asyncio.to_thread(review.settle, checkpoints, checkpoint, files, reply)
    log.info("after-the-fact review of %s: %s", checkpoint, done)
    changed = [*done["undone"], *done["partly"]]
    if changed:
        uris = [(checkpoints.worktree / p).as_uri() for p in changed]
        server.protocol.notify("checkpoints/restored", {"uris": uris})
