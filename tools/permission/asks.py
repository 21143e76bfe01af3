"""What an ask is on the wire: the request a person sees, their reply, what "always" may
cover, and the rejection a call gets when nobody can be asked."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from tools.errors import PermissionRejectedError

ReplyKind = Literal["once", "always", "reject"]
# Where an "always" is kept: this session, the project's or the user's config file;
# "sidecar" (a reply that names no scope): every session of this sidecar, as OpenCode.
Scope = Literal["sidecar", "session", "project", "user"]
SCOPES: tuple[Scope, ...] = ("sidecar", "session", "project", "user")


_ask_ids = itertools.count(1)
_ASK_PREFIX = os.urandom(4).hex()  # what secrets.token_hex reads, without importing hmac


def new_ask_id() -> str:
    return f"per_{_ASK_PREFIX}{next(_ask_ids):06x}"


@dataclass(frozen=True)
class AlwaysOption:
    """One thing an "always" can cover: its patterns, and what they mean in words."""

    id: str
    patterns: tuple[str, ...]
    label: str

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "patterns": list(self.patterns), "label": self.label}


def describe_patterns(permission: str, patterns: Iterable[str]) -> str:
    """What rules for ``patterns`` cover, in words ("commands starting `git status`")."""
    return ", ".join(_describe(permission, p) for p in patterns) or "nothing"


def _describe(permission: str, pattern: str) -> str:
    if permission == "bash":
        if pattern == "*":
            return "every command"
        if pattern.endswith(" *") and "*" not in pattern[:-2]:
            return f"commands starting `{pattern[:-2]}`"
        return f"the command `{pattern}`"
    if permission in ("edit", "read", "external_directory"):
        if pattern == "*":
            return "every file"
        if pattern.startswith("*.") and "/" not in pattern and "*" not in pattern[1:]:
            return f"files matching {pattern} (in any folder)"
        if pattern.endswith("/*") and "*" not in pattern[:-2]:
            return f"files in {pattern[:-1]} (and its subfolders)"
        if "*" not in pattern and "?" not in pattern:
            return f"the file {pattern}"
        return f"files matching {pattern}"
    if pattern == "*":
        return f"every `{permission}` call"
    return f"`{permission}` for {pattern}"


@dataclass
class PermissionRequest:
    session_id: str
    call_id: str
    message_id: str
    tool: str
    permission: str
    patterns: list[str]
    always: list[str]
    title: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # What "always" may cover; the first is the default (``always``). Empty: from ``always``.
    always_options: list[AlwaysOption] = field(default_factory=list)
    id: str = field(default_factory=new_ask_id)
    # Where an "always" of scope project / user would be saved (the real paths, for labels).
    rule_files: dict[str, str] = field(default_factory=dict)

    def options(self) -> list[AlwaysOption]:
        if self.always_options:
            return self.always_options
        if not self.always:
            return []
        label = describe_patterns(self.permission, self.always)
        return [AlwaysOption("default", tuple(self.always), label)]

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "id": self.id,
            "sessionID": self.session_id,
            "callID": self.call_id,
            "messageID": self.message_id,
            "tool": self.tool,
            "permission": self.permission,
            "patterns": self.patterns,
            "always": self.always,
            "title": self.title,
            "metadata": self.metadata,
            "alwaysOptions": [option.to_wire() for option in self.options()],
        }
        if self.rule_files:
            wire["ruleFiles"] = dict(self.rule_files)
        return wire


UnsavedChoice = Literal["editor", "save"]


@dataclass(frozen=True)
class PermissionReply:
    """A person's answer; the review fields narrow an ``edit`` ask (docs/protocol.md)."""

    reply: ReplyKind
    message: str | None = None
    hunks: tuple[str, ...] | None = None  # hunk ids to apply (None: every hunk)
    files: tuple[str, ...] | None = None  # relative paths to apply whole
    edited: dict[str, str] | None = None  # relative path -> the text the person wants
    scope: Scope = "sidecar"  # where an "always" is kept
    always_option: str | None = None  # which of the ask's alwaysOptions (None: the first)
    unsaved: UnsavedChoice | None = None  # overlapping unsaved work: editor only, or save it
    notice: str | None = None  # set by the service: something the person should be told

    @property
    def narrowed(self) -> bool:
        return self.hunks is not None or self.files is not None


Asker = Callable[[PermissionRequest], Awaitable[PermissionReply]]


REJECTED = "The user rejected permission to use this specific tool call."


def headless_rejection(request: PermissionRequest) -> PermissionRejectedError:
    """What a call gets when nobody can be asked: a rejection that says how to allow it."""
    if request.metadata.get("protected"):
        return PermissionRejectedError(
            f"This change ({', '.join(request.patterns)}) alters what the agent may do, so a "
            "person must approve it each time, and no one could be asked: the client answers "
            "no permission prompts. It was not made. The user can make the change, or approve "
            "it with `toolhost run --yes`."
        )
    example = {"permission": {request.permission: {request.patterns[0]: "allow"}}}
    return PermissionRejectedError(
        f"This call needs the `{request.permission}` permission for "
        f"{', '.join(request.patterns)}, and no one could be asked: the client answers no "
        "permission prompts. It was not run. A user can allow it in opencode.json, e.g. "
        f"{json.dumps(example)}, or approve it with `toolhost run --yes`."
    )
