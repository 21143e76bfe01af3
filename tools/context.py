"""The context a tool's ``execute`` receives (reference §1.5), and ``Host``: the part of the
host running it that a tool may use.

A tool never sees ``tools.host.ToolHost`` itself: ``Host`` names the few things tools
use of it (its folders, config, rules, sessions and sub-agents), so this module, and every
tool, sits below the host that runs them (OpenCode's ``Tool.Context`` carries no host).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tools.abort import AbortSignal, run_blocking
from tools.editor import EditorBridge
from tools.fsio.paths import Pins, visible
from tools.permission.asks import AlwaysOption, PermissionReply, PermissionRequest
from tools.permission.prompts import plain_title
from tools.permission.rules import Rule

if TYPE_CHECKING:
    import asyncio

    from tools.agents.catalog import Agent
    from tools.agents.children import Child
    from tools.agents.policy import ChildPolicy
    from tools.checkpoints.turns import Turn
    from tools.config.dirs import OwnFolders
    from tools.config.effective import Config
    from tools.fsio.paths import Roots
    from tools.model import ModelRef
    from tools.permission.rules import Ruleset
    from tools.permission.service import PermissionService
    from tools.result import ToolResult
    from tools.session import Session, Sessions

T = TypeVar("T")

UPDATE_INTERVAL_SECONDS = 0.1


class Offered(Protocol):
    """A tool as a catalogue offers it to a model (``tools.tool.Tool`` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def schema(self) -> dict[str, Any] | None: ...


class Host(Protocol):
    """What a tool may use of the host that runs it (``tools.host.ToolHost``)."""

    @property
    def worktree(self) -> Path: ...

    @property
    def directory(self) -> Path: ...

    @property
    def roots(self) -> Roots:
        """The directory and worktree, as written and resolved (the external guard)."""
        ...

    @property
    def own_folders(self) -> OwnFolders:
        """toolhost's own folders, which no tool may reach (the external guard)."""
        ...

    @property
    def config(self) -> Config: ...

    @property
    def permissions(self) -> PermissionService: ...

    @property
    def sessions(self) -> Sessions: ...

    def rule_sides(self, session_id: str | None, agent: str) -> list[Ruleset]:
        """The rulesets a call must pass (several in a sub-agent's session)."""
        ...

    def custom_watch_dirs(self) -> list[Path]:
        """The folders custom tools are loaded from (they are protected)."""
        ...

    # -- the catalogue, for truncation's hint and the sidecar's own sub-agent loop --

    def task_available(
        self,
        agent: str,
        capabilities: frozenset[str] = frozenset(),
        session_id: str | None = None,
    ) -> bool: ...

    def offered(
        self,
        *,
        model: ModelRef | None = None,
        capabilities: frozenset[str] = frozenset(),
        agent: str = "build",
        session_id: str | None = None,
    ) -> Sequence[Offered]: ...

    async def execute(
        self,
        tool_id: str,
        args: Any,
        *,
        editor: EditorBridge | None = None,
        session_id: str | None = None,
        call_id: str | None = None,
        message_id: str = "",
        agent: str = "build",
        model: ModelRef | None = None,
    ) -> ToolResult: ...

    # -- sub-agents (task) --

    @property
    def agents(self) -> Mapping[str, Agent]: ...

    @property
    def subagent_depth(self) -> int: ...

    @property
    def children(self) -> Mapping[str, Child]: ...

    def depth_of(self, session_id: str | None) -> int: ...

    def policy_for(self, session_id: str | None) -> ChildPolicy | None: ...

    def new_child(
        self,
        parent_session_id: str,
        parent_agent: str,
        agent: Agent,
        title: str,
        model: ModelRef | None,
    ) -> Child: ...


@dataclass
class ToolContext:
    host: Host
    session: Session
    tool: str
    call_id: str
    message_id: str = ""
    agent: str = "build"
    model: ModelRef | None = None
    editor: EditorBridge = field(default_factory=EditorBridge)
    abort: AbortSignal = field(default_factory=AbortSignal)
    # Where each path this call checked really is (tools.fsio.paths.Pins): its file I/O goes there.
    pins: Pins = field(default_factory=Pins)
    # Asks of this call that went past the rules (to a person, or refused for want of
    # one): time may have passed in them, so what was looked at before may have changed.
    people_asked: int = 0
    # The turn this call belongs to (tools.checkpoints): what it changes is kept there.
    turn: Turn | None = None
    _last_update: float = 0.0
    _pending_update: dict[str, Any] | None = None
    _flush_handle: asyncio.TimerHandle | None = None

    def real(self, path: Path) -> Path:
        """Where ``path`` was checked to be (``pins``), for the call's file I/O."""
        return self.pins.real(path)

    def real_text(self, path: str) -> str:
        """``real`` as text."""
        return self.pins.real_text(path)

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def worktree(self) -> Path:
        return self.host.worktree

    @property
    def directory(self) -> Path:
        return self.host.directory

    async def ask(
        self,
        permission: str,
        patterns: list[str],
        always: list[str],
        metadata: dict[str, Any] | None = None,
        title: str | None = None,
        *,
        force: bool = False,
        always_options: list[AlwaysOption] | None = None,
    ) -> PermissionReply | None:
        """Return when allowed; raise a permission error when denied or rejected.

        The person's reply is returned (None: the rules allowed it), for the review
        fields an edit ask may get back.  ``force`` asks a person even when the rules
        allow it (a deny still wins).  ``always_options``: what "always" may cover,
        in words (the first is the default); else ``always``, described.
        """
        service = self.host.permissions
        policy = self.host.policy_for(self.session_id)  # a sub-agent's session
        if not force and not service.needs_person(
            self.agent, permission, patterns, self.session_id, policy=policy
        ):
            return None  # allowed by the rules: no request to build
        self.people_asked += 1
        # A control character in a title could make it show something it does not say.
        title = visible(title or plain_title(self.tool, permission, patterns, metadata or {}))
        request = PermissionRequest(
            session_id=self.session_id,
            call_id=self.call_id,
            message_id=self.message_id,
            tool=self.tool,
            permission=permission,
            patterns=patterns,
            always=always,
            title=f"@{self.agent} sub-agent: {title}" if policy is not None else title,
            metadata=metadata or {},
            always_options=always_options or [],
        )
        reply = await service.ask(
            request, self.agent, self.editor.ask_permission, force=force, policy=policy
        )
        if reply is not None and reply.notice:
            self.editor.show_message(reply.notice)
        return reply

    def rule_sides(self) -> list[list[Rule]]:
        """The rulesets this call must pass (several in a sub-agent's session)."""
        return self.host.rule_sides(self.session_id, self.agent)

    def metadata(self, title: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        """Report progress (``tools/update``), at most every 100 ms; the latest wins."""
        update: dict[str, Any] = {
            "sessionID": self.session_id,
            "messageID": self.message_id,
            "callID": self.call_id,
            "metadata": metadata or {},
        }
        if title is not None:
            update["title"] = title
        now = time.monotonic()
        if now - self._last_update >= UPDATE_INTERVAL_SECONDS and self._flush_handle is None:
            self._send(update)
            return
        self._pending_update = update
        if self._flush_handle is None:
            delay = max(0.0, UPDATE_INTERVAL_SECONDS - (now - self._last_update))
            import asyncio  # where it runs: `toolhost list` never imports it

            self._flush_handle = asyncio.get_running_loop().call_later(delay, self._flush)

    def metadata_now(
        self, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        """Report progress at once, past the rate limit (a queued older update is dropped:
        this one supersedes it).  For rare events a client must not miss."""
        self.finish()
        update: dict[str, Any] = {
            "sessionID": self.session_id,
            "messageID": self.message_id,
            "callID": self.call_id,
            "metadata": metadata or {},
        }
        if title is not None:
            update["title"] = title
        self._send(update)

    def _flush(self) -> None:
        self._flush_handle = None
        if self._pending_update is not None:
            update, self._pending_update = self._pending_update, None
            self._send(update)

    def _send(self, update: dict[str, Any]) -> None:
        self._last_update = time.monotonic()
        self.editor.notify_update(update)

    def finish(self) -> None:
        """Drop queued progress: the final result supersedes it."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._pending_update = None

    async def run_blocking(self, fn: Callable[..., T], *args: object) -> T:
        """Run file work in a worker thread that stops when the call is cancelled."""
        return await run_blocking(self.abort, fn, *args)
