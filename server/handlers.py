"""The editor connection's ``tools/list``, ``tools/execute`` and rules requests: check
params, build the call's bridge, and run it as every door does (``server.calls``).

Imported on first use (see ``server.app``) because it loads the tool framework.
Both wait for the first load of the config files and custom tools (see
``server.state``), so no call runs before the project's rules are known.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from server import calls
from server.bridge import LspEditorBridge
from server.params import parse_execute, parse_list
from tools.permission.approvals import SaveError
from tools.worktree import problems

if TYPE_CHECKING:
    from server.sidecar import ToolhostServer

log = logging.getLogger("toolhost.server")


async def tools_list(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    params = parse_list(raw)  # a protocol fault is answered without waiting
    state = server.state
    await state.ready()
    bridge = LspEditorBridge(server, state.options)
    tools = calls.listing(
        state.host,
        model=params.model or state.options.model,
        capabilities=bridge.capabilities(),
        agent=params.agent or state.options.agent,
        session_id=params.session_id or state.session_id,
    )
    # What could not be used or was ignored (file, line, key), and whether the folder is
    # trusted (docs/protocol.md, "Trust and fail-closed config").
    found = problems(state.loaded, state.host) if state.loaded is not None else []
    return {
        "tools": tools,
        "problems": [problem.to_json() for problem in found],
        "trusted": state.trust.trusted,
    }


def starts_eagerly(server: ToolhostServer, raw: Any) -> bool:
    """Whether this ``tools/execute`` may take its first step at once, before it has a
    task (``ToolhostProtocol.start_eagerly_when``): its tool says it may (``Tool.eager``)."""
    tool = raw.get("tool") if isinstance(raw, dict) else None
    return isinstance(tool, str) and server.state.host.starts_eagerly(tool)


async def tools_execute(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    params = parse_execute(raw)
    state = server.state
    await state.ready()
    bridge = LspEditorBridge(server, state.options, params.work_done_token, params.message_id or "")
    bridge.begin_progress(params.tool)
    try:
        return await calls.execute(
            state.host,
            params.tool,
            params.args,
            editor=bridge,
            session_id=params.session_id or state.session_id,
            call_id=params.call_id,
            message_id=params.message_id or "",
            agent=params.agent or state.options.agent,
            model=params.model or state.options.model,
            turn_id=params.turn_id,
        )
    finally:
        bridge.end_progress()


def _optional_session(raw: Any, method: str) -> str | None:
    """The request's ``sessionID``, when it names one (else every session)."""
    session = raw.get("sessionID") if isinstance(raw, dict) else None
    if session is not None and not isinstance(session, str):
        raise JsonRpcInvalidParams(f"{method}: sessionID must be a string")
    return session


async def permission_rules(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    """``permission/rules``: every "always" kept (of one session, or all) and every saved rule."""
    session = _optional_session(raw, "permission/rules")
    state = server.state
    await state.ready()
    rules = await asyncio.to_thread(state.host.permissions.rules, session)
    return {"rules": [rule.to_wire() for rule in rules]}


async def permission_revoke(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    """``permission/revoke {id}``: take one rule back; saved rules leave their config file."""
    rule_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(rule_id, str):
        raise JsonRpcInvalidParams(
            "permission/revoke needs params.id, a rule id from permission/rules"
        )
    state = server.state
    await state.ready()
    try:
        revoked = await asyncio.to_thread(state.host.permissions.revoke, rule_id)
    except SaveError as error:
        raise JsonRpcInternalError(f"the rule could not be removed: {error}") from None
    if revoked is None:
        return {"revoked": False}
    if revoked.scope in ("project", "user"):
        await state.reload_config()  # the rule is gone before the answer, not on the next poll
    return {"revoked": True, "rule": revoked.to_wire()}


# ---------------------------------------------------------------- checkpoints (undo)


async def turn_begin(server: ToolhostServer, raw: Any) -> None:
    """``turn/begin {turnID, title?, sessionID?}``: the calls that follow are one turn."""
    if not isinstance(raw, dict) or not isinstance(raw.get("turnID"), str):
        log.warning("turn/begin needs params.turnID, a string; ignored")
        return
    state = server.state
    await state.ready()
    title = str(raw["title"]) if isinstance(raw.get("title"), str) else ""
    session = raw.get("sessionID") if isinstance(raw.get("sessionID"), str) else None
    state.host.checkpoints.begin(session or state.session_id, raw["turnID"], title)


async def checkpoints_list(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    """``checkpoints/list {sessionID?}``: every checkpoint, oldest first."""
    session = _optional_session(raw, "checkpoints/list")
    state = server.state
    await state.ready()
    entries = await asyncio.to_thread(state.host.checkpoints.entries, session)
    return {"checkpoints": entries}


async def checkpoints_restore(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    """``checkpoints/restore {id, dryRun?, force?, paths?}``."""
    from server.undo import parse_restore

    params = parse_restore(raw)
    state = server.state
    await state.ready()
    checkpoints = state.host.checkpoints
    try:
        result = await asyncio.to_thread(
            lambda: checkpoints.restore(
                params.id, dry_run=params.dry_run, force=params.force, paths=params.paths
            )
        )
    except KeyError:
        raise JsonRpcInvalidParams(
            f"checkpoints/restore: no checkpoint {params.id!r}; checkpoints/list names them"
        ) from None
    if result["restored"] and not params.dry_run:
        written = [str(checkpoints.worktree / p) for p in result["restored"]]
        # Clean buffers of these files reload; dirty ones are the person's, left alone.
        server.protocol.notify("checkpoints/restored", {"uris": [_uri(p) for p in written]})
    return result


async def checkpoints_diff(server: ToolhostServer, raw: Any) -> dict[str, Any]:
    """``checkpoints/diff {id, path}``: the file before the checkpoint and now, as text."""
    from server.undo import diff_of

    state = server.state
    await state.ready()
    return await asyncio.to_thread(diff_of, state.host.checkpoints, raw)


def _uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()
