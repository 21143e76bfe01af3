"""ACP prompts as toolhost's turns (issue 26).

Every ``session/prompt`` the proxy relays is one turn of the agent.  ``begin`` sends
``turn/begin {sessionID, turnID, title, since}`` as a request on the session's own attach
connection (``server.attach.turns``), answered once the sidecar's first scan of the
turn is done; the proxy relays the prompt after that (at most ``BEGIN_SECONDS``), so a
file the agent's own tool writes at once is still seen as changed.  While the turn is
open, every call of the session carries its ``turnID`` (``SessionLink.turn_id``).
``end`` sends ``turn/end {sessionID, turnID, stopReason}`` once the agent answered the
prompt; the sidecar then asks this connection (``permission/ask``, kind
``afterTheFact``) about the files changed outside toolhost during the turn, which the
proxy puts to the ACP client as ``session/request_permission`` before it relays the
prompt's answer.  A sidecar answering -32601 has no turns: logged once, then the
proxy stops sending them.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from server.acp.relay import SessionLink
from server.attach.rpc import METHOD_NOT_FOUND, RpcError

log = logging.getLogger("toolhost.acp")

BEGIN_SECONDS = 3.0  # the longest a prompt waits for its turn's first scan (1 s at 100k files)
TITLE_CHARS = 80

_unsupported = False  # the sidecar answered -32601 once: it has no turns


def title_of(prompt: Any) -> str:
    """The prompt's first text, on one line, for ``checkpoints/list``."""
    for block in prompt if isinstance(prompt, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            text = " ".join(str(block.get("text", "")).split())
            return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return ""


async def begin(link: SessionLink, title: str) -> str | None:
    """Mark the start of a turn; its id, or None when the sidecar has no turns."""
    turn_id = f"turn_{secrets.token_hex(8)}"
    link.turn_id = turn_id  # the calls that follow carry it, even before the answer
    # ``since``: the agent may start before the sidecar hears of the turn (it is busy,
    # or still starting): what changes from now on is the turn's.
    params = {
        "sessionID": link.toolhost_session,
        "turnID": turn_id,
        "title": title,
        "since": time.time(),
    }
    if await _send(link, "turn/begin", params) is None:
        link.turn_id = None
        return None
    return turn_id


async def end(link: SessionLink, turn_id: str | None, stop_reason: Any) -> Any:
    """End the turn (and have its outside changes reviewed); the sidecar's answer."""
    if turn_id is None:
        return None
    params = {"sessionID": link.toolhost_session, "turnID": turn_id, "stopReason": stop_reason}
    try:
        return await _send(link, "turn/end", params)
    finally:
        if link.turn_id == turn_id:
            link.turn_id = None


async def _send(link: SessionLink, method: str, params: dict[str, Any]) -> Any:
    """The answer, or None when it failed (logged)."""
    global _unsupported
    if _unsupported:
        return None
    try:
        answer = await link.request(method, params)
    except RpcError as error:
        if error.code == METHOD_NOT_FOUND:
            _unsupported = True
            log.info("the sidecar has no %s: prompts are not turns", method)
        else:
            log.warning("%s failed: %s", method, error.message)
        return None
    except (ConnectionError, OSError, RuntimeError) as error:
        log.warning("%s failed: %s", method, error)
        return None
    return answer if answer is not None else {}
