"""The seam between ACP prompts and toolhost's turns (issue 26 defines turns).

Every ``session/prompt`` the proxy relays is one turn of the agent: ``begin`` is
started as the prompt is relayed (it does not hold the prompt back) and ``end`` runs
once the agent answered it, after ``begin`` finished.
Until issue 26's API is wired in here, ``begin`` sends ``turn/begin``
``{sessionID, turnID, source: "acp", acpSessionId}`` on the session's own attach
connection to the sidecar and ``end`` sends ``turn/end`` ``{sessionID, turnID,
stopReason}``; a sidecar that does not know the method answers -32601, which is
logged once and then taken as "no turns here" (nothing else changes).  Nothing is
faked: without issue 26 there are no checkpoints, and the report says so.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from server.acp.relay import SessionLink
from server.attach.rpc import METHOD_NOT_FOUND, RpcError

log = logging.getLogger("toolhost.acp")

_unsupported = False  # the sidecar answered -32601 once: it has no turns


async def begin(link: SessionLink, acp_session: str) -> str | None:
    """Mark the start of a turn; its id, or None when the sidecar has no turns."""
    turn_id = f"turn_{secrets.token_hex(8)}"
    params = {
        "sessionID": link.toolhost_session,
        "turnID": turn_id,
        "source": "acp",
        "acpSessionId": acp_session,
    }
    return turn_id if await _send(link, "turn/begin", params) else None


async def end(link: SessionLink, turn_id: str | None, stop_reason: Any) -> None:
    if turn_id is None:
        return
    params = {"sessionID": link.toolhost_session, "turnID": turn_id, "stopReason": stop_reason}
    await _send(link, "turn/end", params)


async def _send(link: SessionLink, method: str, params: dict[str, Any]) -> bool:
    global _unsupported
    if _unsupported:
        return False
    try:
        await link.request(method, params)
    except RpcError as error:
        if error.code == METHOD_NOT_FOUND:
            _unsupported = True
            log.info("the sidecar has no %s (issue 26 not merged): prompts are not turns", method)
        else:
            log.warning("%s failed: %s", method, error.message)
        return False
    except (ConnectionError, OSError, RuntimeError) as error:
        log.warning("%s failed: %s", method, error)
        return False
    return True
