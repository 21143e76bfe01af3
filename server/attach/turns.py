"""Turns on the attach socket: ``turn/begin`` and ``turn/end`` (what ``toolhost acp``
sends for each ``session/prompt``).

``turn/begin`` is a notification here as on the editor's connection (the turn begins
before any later message of the connection runs); sent as a request it is answered
once the turn's first scan is done, so a caller that waits for the answer misses no
change made right after. ``turn/end`` (a request) ends the turn and reviews its
changes made outside toolhost with the caller: the socket's client is sent the
after-the-fact ``permission/ask`` (``tools.checkpoints.review``) and its answer keeps
or undoes them; a client that answers no ``permission/ask`` leaves them to the
editor's review. The answer says what became of them.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any

from server import after_the_fact
from server.attach.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, Peer, RpcError
from server.replies import BadReply, parse_reply
from tools.errors import PermissionRejectedError
from tools.permission.asks import PermissionReply, PermissionRequest

if TYPE_CHECKING:
    from server.sidecar import ToolhostServer

log = logging.getLogger("toolhost.attach")


class SocketAsker:
    """The after-the-fact review asked of the client on the socket."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.unanswered = False  # the client has no permission/ask

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        try:
            answer = await self.peer.request("permission/ask", request.to_wire())
            return parse_reply(answer)
        except RpcError as error:
            self.unanswered = error.code == METHOD_NOT_FOUND
            raise PermissionRejectedError(f"the client could not review: {error.message}") from None
        except (ConnectionError, BadReply) as error:
            raise PermissionRejectedError(f"the client could not review: {error}") from None


def _turn_params(params: Any, session: str) -> tuple[str, str, str]:
    """``(sessionID, turnID, title)``; a missing turnID is the caller's mistake."""
    merged = {"sessionID": session, **(params if isinstance(params, dict) else {})}
    turn, title = merged.get("turnID"), merged.get("title")
    if not isinstance(turn, str) or not isinstance(merged["sessionID"], str):
        raise RpcError(INVALID_PARAMS, "turn/begin and turn/end need params.turnID, a string")
    return merged["sessionID"], turn, title if isinstance(title, str) else ""


def _since(params: Any) -> float | None:
    """``since``: when the caller's prompt arrived (s since the epoch, this machine's
    clock), so a turn the sidecar hears of late still owns what changed from then."""
    since = params.get("since") if isinstance(params, dict) else None
    if isinstance(since, bool) or not isinstance(since, int | float):
        return None
    return float(since) if math.isfinite(since) else None


def begin_now(server: ToolhostServer, params: Any, session: str) -> None:
    """``turn/begin`` as a notification: begun at once."""
    try:
        session_id, turn_id, title = _turn_params(params, session)
    except RpcError as error:
        log.warning("%s; ignored", error.message)
        return
    server.state.host.checkpoints.begin(session_id, turn_id, title, since=_since(params))


async def begin(server: ToolhostServer, params: Any, session: str) -> dict[str, Any]:
    """``turn/begin`` as a request: ``{turnID, watching}`` once the first scan is done
    (``watching`` false: outside changes go unseen, e.g. the config turned them off)."""
    session_id, turn_id, title = _turn_params(params, session)
    turn = server.state.host.checkpoints.begin(session_id, turn_id, title, since=_since(params))
    scan = turn._scan
    if scan is not None:
        await asyncio.to_thread(scan.join)
    return {"turnID": turn_id, "watching": turn.baseline is not None}


async def end(server: ToolhostServer, peer: Peer, params: Any, session: str) -> dict[str, Any]:
    """``turn/end``: ``{checkpoint, outside}``; ``checkpoint`` null when the turn changed
    nothing (or is not the session's open turn), ``outside`` null when nothing changed
    outside toolhost, else ``{kept, undone, partly, skipped}`` (relative paths)."""
    session_id, turn_id, _ = _turn_params(params, session)
    state = server.state
    checkpoints = state.host.checkpoints
    checkpoint = await asyncio.to_thread(checkpoints.end, session_id, turn_id, offer=False)
    if checkpoint is None:
        return {"checkpoint": None, "outside": None}
    asker = SocketAsker(peer)
    done = await after_the_fact.review(checkpoints, checkpoint, session_id, asker)
    if done is None and asker.unanswered:  # the editor reviews it, as any other turn's
        await after_the_fact.offer(state.host, state.options, server, checkpoint, session_id)
    elif done is not None and (changed := [*done["undone"], *done["partly"]]):
        uris = [(checkpoints.worktree / p).as_uri() for p in changed]
        server.protocol.notify("checkpoints/restored", {"uris": uris})
    return {"checkpoint": checkpoint, "outside": done}
