"""Every message ``toolhost acp`` sends, checked against the ACP v1 JSON Schema.

The schema is the one the official TypeScript SDK ships (``@agentclientprotocol/sdk``,
``schema/v1/schema.json``, Apache-2.0), installed with npm into the e2e cache on
first use, so nothing of it is copied here.  A message is checked against the whole
schema's side (``Agent`` messages to the client, ``Client`` messages to the agent)
and its params or result against the method's own definition.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.mcp.helpers import E2E_CACHE, npm_install

VERSION = "2.4.0"
FOLDER = E2E_CACHE / f"acp-sdk-{VERSION}"
SCHEMA = FOLDER / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / "v1" / "schema.json"

# method -> (its params' definition, its result's definition)
AGENT_METHODS = {  # sent by an agent (so by the proxy to the client)
    "session/request_permission": ("RequestPermissionRequest", "RequestPermissionResponse"),
    "fs/read_text_file": ("ReadTextFileRequest", "ReadTextFileResponse"),
    "fs/write_text_file": ("WriteTextFileRequest", "WriteTextFileResponse"),
    "terminal/create": ("CreateTerminalRequest", "CreateTerminalResponse"),
    "terminal/output": ("TerminalOutputRequest", "TerminalOutputResponse"),
    "terminal/wait_for_exit": ("WaitForTerminalExitRequest", "WaitForTerminalExitResponse"),
    "terminal/kill": ("KillTerminalRequest", "KillTerminalResponse"),
    "terminal/release": ("ReleaseTerminalRequest", "ReleaseTerminalResponse"),
}
CLIENT_METHODS = {  # sent by a client (so by the proxy to the agent)
    "initialize": ("InitializeRequest", "InitializeResponse"),
    "session/new": ("NewSessionRequest", "NewSessionResponse"),
    "session/load": ("LoadSessionRequest", "LoadSessionResponse"),
    "session/prompt": ("PromptRequest", "PromptResponse"),
}
NOTIFICATIONS = {"session/update": "SessionNotification", "session/cancel": "CancelNotification"}


@cache
def schema() -> dict[str, Any]:
    if not SCHEMA.exists():
        failure = npm_install(FOLDER, f"@agentclientprotocol/sdk@{VERSION}", SCHEMA)
        if failure is not None:
            pytest.fail(f"npm could not install the ACP schema:\n{failure}")
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text())
    return loaded


def _check(instance: Any, definition: str | None, side: str | None = None) -> None:
    whole = schema()
    if side is not None:
        target: dict[str, Any] = {**next(s for s in whole["anyOf"] if s["title"] == side)}
    else:
        target = {"$ref": f"#/$defs/{definition}"}
    target["$defs"] = whole["$defs"]
    jsonschema.validate(instance, target)


def validate_sent(records: list[dict[str, Any]]) -> int:
    """Check every message of ``TOOLHOST_ACP_SENT_LOG`` the proxy wrote or changed (what
    it relays unchanged is the other end's, e.g. claude-agent-acp's ``usage_update``
    with ``used: null``); how many were checked."""
    records = [r for r in records if not r.get("relayed")]
    assert records, "the proxy sent nothing of its own"
    for record in records:
        message, to_client = record["message"], record["to"] == "ACP client"
        _check(message, None, "Agent" if to_client else "Client")
        method = message.get("method")
        if method is not None and "id" in message:
            table = AGENT_METHODS if to_client else CLIENT_METHODS
            if method in table:
                _check(message["params"], table[method][0])
        elif method is not None:
            if method in NOTIFICATIONS:
                _check(message["params"], NOTIFICATIONS[method])
        elif "result" in message and record.get("answers"):
            table = CLIENT_METHODS if to_client else AGENT_METHODS
            if record["answers"] in table:
                _check(message["result"], table[record["answers"]][1])
    return len(records)


def schema_file() -> Path:
    schema()
    return SCHEMA
