"""``permission/ask`` answers, checked: the reply and the review fields (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from tools.permission.asks import PermissionReply, ReplyKind, Scope, UnsavedChoice

REPLIES = ("once", "always", "reject")
REPLY_SCOPES = ("session", "project", "user")
UNSAVED_CHOICES = ("editor", "save")


class BadReply(ValueError):
    """The answer does not have the shape of a reply: which field, and why."""


def _strings(answer: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = answer.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadReply(f"`{name}` must be a list of strings")
    return tuple(value)


def _choice(answer: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> str | None:
    value = answer.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise BadReply(f"`{name}` must be one of {', '.join(allowed)}")
    return cast(str, value)


def parse_reply(answer: Any) -> PermissionReply:
    """The reply in ``answer``; raises BadReply naming the first field that is wrong."""
    if not isinstance(answer, Mapping):
        raise BadReply("the answer is not an object")
    reply = answer.get("reply")
    if reply not in REPLIES:
        raise BadReply("`reply` must be once, always or reject")
    message = answer.get("message")
    if message is not None and not isinstance(message, str):
        raise BadReply("`message` must be a string")
    edited = answer.get("edited")
    if edited is not None and (
        not isinstance(edited, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in edited.items())
    ):
        raise BadReply("`edited` must map relative paths to the full text")
    always_option = answer.get("alwaysOption")
    if always_option is not None and not isinstance(always_option, str):
        raise BadReply("`alwaysOption` must be the id of one of the ask's alwaysOptions")
    scope = _choice(answer, "scope", REPLY_SCOPES)
    return PermissionReply(
        cast(ReplyKind, reply),
        message or None,
        hunks=_strings(answer, "hunks"),
        files=_strings(answer, "files"),
        edited=dict(edited) if edited is not None else None,
        scope=cast(Scope, scope or "sidecar"),
        always_option=always_option,
        unsaved=cast("UnsavedChoice | None", _choice(answer, "unsaved", UNSAVED_CHOICES)),
    )
