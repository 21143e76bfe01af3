"""ToolHost: one worktree's tools, sessions, permissions and config, editor-agnostic.

The server and ``toolhost run`` both call ``ToolHost.execute``; the editor they
sit in reaches tools only through the ``EditorBridge`` passed per call.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.agents.catalog import Agent, agents_from_config
from tools.agents.policy import ChildPolicy
from tools.config.effective import DEFAULT_SUBAGENT_DEPTH, Config
from tools.config.saved import ConfigRuleStore
from tools.context import ToolContext
from tools.custom.loader import CustomTools, LoadProblem
from tools.editor import EditorBridge
from tools.errors import ToolError
from tools.fsio.paths import Roots
from tools.model import ModelRef
from tools.permission.defaults import AGENT_RULES, default_rules
from tools.permission.rules import (
    IndexedRules,
    Rule,
    Ruleset,
    disabled_by_rules,
    permission_name,
    rules_from_config,
)
from tools.permission.service import PermissionService
from tools.registry import Registry
from tools.result import ToolResult
from tools.tool import Caller, Tool
from tools.truncation import output_dir

if TYPE_CHECKING:
    from tools.agents.children import Child
    from tools.checkpoints.turns import Checkpoints, Turn
    from tools.config.dirs import OwnFolders
    from tools.session import Session, Sessions

# Denied in every child session unless its agent names them in its own rules.
CHILD_DENIED_UNLESS_DECLARED = ("todowrite", "todoread", "task")

_ID_PREFIX = os.urandom(6).hex()  # unique per process (uuid would import platform)
_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """A fresh id, unique across processes (random part) and calls (counter)."""
    return f"{prefix}_{_ID_PREFIX}{next(_ids):08x}"


class ToolHost:
    def __init__(
        self,
        worktree: Path,
        *,
        directory: Path | None = None,
        config: Config | None = None,
        tools: Iterable[Tool] | None = None,
        load_custom: bool = False,
        read_before_write: bool = True,
        permission_defaults: Ruleset | None = None,
        trusted: bool = True,
        track_outside: bool = False,
    ) -> None:
        from tools.builtin.lazy import builtin_tools, invalid_tool

        self.worktree = Path(os.path.abspath(worktree))
        self.directory = Path(os.path.abspath(directory)) if directory else self.worktree
        self.config = config or Config()
        self.registry = Registry(builtin_tools() if tools is None else tools, invalid_tool)
        self._read_before_write = read_before_write
        self._track_outside = track_outside
        self._rules_cache: dict[str, Ruleset] = {}
        # The editor's defaults (initializationOptions.permissionDefaults): beneath the
        # agent's rules and every config file, above OpenCode's built-in defaults.
        self.permission_defaults: Ruleset = list(permission_defaults or [])
        self.children: dict[str, Child] = {}  # the sessions task started, by session id
        rules = ConfigRuleStore(self.worktree, lambda path: self.checkpoints.wrote([path]))
        self.permissions = PermissionService(self._rules_for, rules)
        # Nothing is read until reload_custom(): construction stays cheap.  An untrusted
        # folder's own tool files (tools.permission.trust) are never imported.
        self.custom = CustomTools(self.directory, self.worktree, project=trusted)
        if load_custom:
            self.reload_custom()

    # The sessions and the checkpoints are made on first use: a listing (``toolhost
    # list``, ``tools/list``) needs neither, nor the modules behind them (orjson and uuid,
    # subprocess, datetime...).

    @functools.cached_property
    def sessions(self) -> Sessions:
        from tools.session import Sessions

        return Sessions(read_before_write=self._read_before_write)

    @functools.cached_property
    def checkpoints(self) -> Checkpoints:
        """Every turn's changes, kept to be undone (tools.checkpoints); ``track_outside``:
        also scanning for changes made beside toolhost (a long-lived sidecar only)."""
        from tools.checkpoints.turns import Checkpoints

        checkpoints = Checkpoints(
            self.worktree,
            lambda: [str(self.directory), *self.config.allowed_dirs],
            outside_changes=self._track_outside,
        )
        checkpoints.configure(self.config.checkpoints)
        return checkpoints

    def reload_custom(self) -> bool:
        """Rescan custom tool files and plugins; True when the catalogue changed.

        Blocking (imports files, may start Node.js and, once, run npm): a server
        should call it in a worker thread, then send ``tools/listChanged`` on True.
        """
        if not self.custom.reload():
            return False
        self.registry = self.registry.with_custom(self.custom.tools)
        return True

    @property
    def custom_problems(self) -> list[LoadProblem]:
        """Custom tool files and plugins that could not be loaded, and why."""
        return list(self.custom.problems)

    def custom_watch_dirs(self) -> list[Path]:
        """The folders whose changes should trigger ``reload_custom`` (may not exist yet)."""
        return self.custom.watch_dirs()

    def close(self) -> None:
        """Stop the Node.js process that runs JS/TS custom tools, if one was started."""
        self.custom.close()

    @functools.cached_property
    def roots(self) -> Roots:
        """The directory and worktree as written and resolved (they do not move)."""
        return Roots.of(self.directory, self.worktree)

    @functools.cached_property
    def own_folders(self) -> OwnFolders:
        """toolhost's own folders (runtime, trust store), out of every tool's reach: worked
        out from the environment once, not from three environment lookups per file a call
        touches (the environment a host runs in does not change under it)."""
        from tools.config.dirs import own_folders  # the guard's: not for a listing

        return own_folders()

    def _rules_for(self, agent: str) -> Ruleset:
        # Built once per agent and config: every ask evaluates against these.
        rules = self._rules_cache.get(agent)
        if rules is None:
            base = [
                *default_rules(output_dir()),
                *self.permission_defaults,
                *rules_from_config(AGENT_RULES.get(agent)),
            ]
            known = self.agents.get(agent)
            own = known.config_rules if known is not None else []
            rules = IndexedRules(self.config.effective_rules(base, own))
            self._rules_cache[agent] = rules
        return rules

    def set_config(self, config: Config) -> None:
        self.config = config
        if "checkpoints" in self.__dict__:  # else made with this config when first used
            self.checkpoints.configure(config.checkpoints)
        self._rules_cache.clear()
        self.__dict__.pop("agents", None)

    @functools.cached_property
    def agents(self) -> dict[str, Agent]:
        """Every agent by name: OpenCode's built-ins with the config's ``agent`` applied."""
        return agents_from_config(self.config.agents)

    # -- child sessions (task) ------------------------------------------------------

    @property
    def subagent_depth(self) -> int:
        depth = self.config.subagent_depth
        return DEFAULT_SUBAGENT_DEPTH if depth is None else depth

    def depth_of(self, session_id: str | None) -> int:
        child = self.children.get(session_id) if session_id else None
        return child.depth if child is not None else 0

    def policy_for(self, session_id: str | None) -> ChildPolicy | None:
        """A child session's policy; None for a session task did not start."""
        child = self.children.get(session_id) if session_id else None
        return child.policy if child is not None else None

    def rule_sides(self, session_id: str | None, agent: str) -> list[Ruleset]:
        """The rulesets a call must pass: one for a top-level session (its agent's rules
        and the "always" answers), several for a child (``tools.agents.policy``)."""
        policy = self.policy_for(session_id)
        if policy is not None:
            return policy.sides()
        return [[*self._rules_for(agent), *self.permissions.approved_for(session_id)]]

    def new_child(
        self,
        parent_session_id: str,
        parent_agent: str,
        agent: Agent,
        title: str,
        model: ModelRef | None,
    ) -> Child:
        """A child session of ``parent_session_id`` that runs ``agent``."""
        from tools.agents.children import Child  # task only: a plain call never loads it

        session_id = new_id("ses")
        parent = self.children.get(parent_session_id)
        child = Child(
            session_id=session_id,
            parent_session_id=parent_session_id,
            parent_agent=parent_agent,
            agent=agent,
            depth=(parent.depth if parent is not None else 0) + 1,
            title=title,
            policy=ChildPolicy(
                lambda: self.rule_sides(child.parent_session_id, child.parent_agent),
                lambda: self.child_rules(child.agent),
            ),
            model=model,
        )
        self.children[session_id] = child
        return child

    def _turn_of_child(self, session_id: str) -> Turn | None:
        """A sub-agent's calls belong to the turn of the session that started it."""
        child = self.children.get(session_id)
        while child is not None and child.parent_session_id in self.children:
            child = self.children[child.parent_session_id]
        if child is None:
            return None
        return self.checkpoints.turn_for(child.parent_session_id)

    def child_rules(self, agent: Agent) -> Ruleset:
        """The sub-agent's side: its rules, then what every child is denied."""
        denied = [
            Rule(permission, "*", "deny")
            for permission in CHILD_DENIED_UNLESS_DECLARED
            if not agent.declares(permission)
        ]
        denied += [Rule(tool_id, "*", "deny") for tool_id in self.config.primary_tools]
        return [*self._rules_for(agent.name), *denied]

    def blocked_in(self, child: Child, tool_id: str) -> bool:
        """True when the child may not use ``tool_id`` at all (its agent switches it
        off, or a side of its rules denies it outright)."""
        return tool_id in child.agent.disabled_tools or child.policy.hides(permission_name(tool_id))

    def hidden_in(self, child: Child, tool_id: str) -> bool:
        """True when the child is not offered ``tool_id`` (``task`` also not at the
        depth limit: a call then gets OpenCode's depth message)."""
        if tool_id == "task" and child.depth >= self.subagent_depth:
            return True
        return self.blocked_in(child, tool_id)

    # -- the catalogue --------------------------------------------------------------

    def task_available(
        self,
        agent: str,
        capabilities: frozenset[str] = frozenset(),
        session_id: str | None = None,
    ) -> bool:
        """True when the caller is offered ``task`` (truncation then suggests it)."""
        return any(
            tool.id == "task"
            for tool in self.offered(capabilities=capabilities, agent=agent, session_id=session_id)
        )

    def offered(
        self,
        *,
        model: ModelRef | None = None,
        capabilities: frozenset[str] = frozenset(),
        agent: str = "build",
        session_id: str | None = None,
    ) -> list[Tool]:
        """The catalogue for a model, client and agent (an agent's blanket denies hide tools).

        A child session's catalogue is its sub-agent's, less what any side denies.
        """
        offered = self.registry.offered(model=model, config=self.config, capabilities=capabilities)
        offered = [t for t in offered if t.available is None or t.available(self, capabilities)]
        child = self.children.get(session_id) if session_id else None
        if child is not None:
            caller = Caller(child.agent.name, session_id)
            return [
                t.described_for(self, caller) for t in offered if not self.hidden_in(child, t.id)
            ]
        rules = self._rules_for(agent)
        caller = Caller(agent, session_id)
        return [
            tool.described_for(self, caller)
            for tool in offered
            if not disabled_by_rules(
                permission_name(tool.id), rules, self.permissions.approved_for(session_id)
            )
        ]

    def starts_eagerly(self, tool_id: str) -> bool:
        """Whether a call of ``tool_id`` may take its first step before it has a task
        (``Tool.eager``): the tool that will run, a custom one of that name included."""
        tool = self.registry.get(tool_id)
        return tool is not None and tool.eager

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
        turn_id: str | None = None,
    ) -> ToolResult:
        editor = editor or EditorBridge()
        session = self.sessions.get(session_id or new_id("ses"))
        child = self.children.get(session.id)
        if child is not None:
            return await self._execute_in_child(
                child, tool_id, args, editor, call_id or new_id("call"), message_id, model
            )
        # The title is worked out only if the call begins a turn (most join the open one).
        turn = self.checkpoints.turn_for(
            session.id, turn_id, title=functools.partial(_title, tool_id, args)
        )
        return await self._execute(
            tool_id, args, editor, session, call_id, message_id, agent, model, turn
        )

    async def _execute_in_child(
        self,
        child: Child,
        tool_id: str,
        args: Any,
        editor: EditorBridge,
        call_id: str,
        message_id: str,
        model: ModelRef | None,
    ) -> ToolResult:
        """A call in a child session: its agent, its rules, reported to and ended with
        the ``task`` call running it."""
        run = child.run
        if run is None:
            return ToolResult(
                title=tool_id,
                output=f"The sub-agent session {child.session_id} is not running: the task call "
                "that ran it has ended or was cancelled, so it takes no more tool calls.",
                metadata={"error": "failed"},
                is_error=True,
            )
        run.started(call_id, tool_id, args)
        found = self.registry.get(tool_id)
        if found is not None and self.blocked_in(child, found.id):
            refused = found.error_result(
                f"The {found.id} tool is not available to the {child.agent.name} sub-agent: "
                "its rules, or those of the agent that started it, do not allow it. Do the task "
                "with the tools you were given.",
                "permission_denied",
            )
            run.finished(call_id, refused)
            return refused
        session = self.sessions.get(child.session_id)
        import asyncio  # where it runs: `toolhost list` never imports it

        call = asyncio.ensure_future(
            self._execute(
                tool_id, args, editor, session, call_id, message_id, child.agent.name, model
            )
        )
        run.tasks.add(call)
        try:
            result = await call
        except asyncio.CancelledError:
            run.cancelled(call_id)
            raise
        finally:
            run.tasks.discard(call)
        run.finished(call_id, result)
        return result

    async def _execute(
        self,
        tool_id: str,
        args: Any,
        editor: EditorBridge,
        session: Session,
        call_id: str | None,
        message_id: str,
        agent: str,
        model: ModelRef | None,
        turn: Turn | None = None,
    ) -> ToolResult:
        tool = self.registry.get(tool_id)
        if tool is None:
            available = self.offered(
                model=model, capabilities=editor.capabilities(), agent=agent, session_id=session.id
            )
            tool, args = (
                self.registry.invalid,
                {
                    "tool": tool_id,
                    "error": f"Model tried to call unavailable tool '{tool_id}'. "
                    f"Available tools: {', '.join(t.id for t in available)}.",
                },
            )
        elif not self.config.is_enabled(tool.id):
            return ToolResult(
                title=tool.id,
                output=f"The '{tool.id}' tool is disabled in this project's configuration "
                f'(tools: {{"{tool.id}": false}}), so it cannot be used. Do the task with '
                "the tools that are available.",
                metadata={"error": "permission_denied"},
                is_error=True,
            )
        ctx = ToolContext(
            host=self,
            session=session,
            tool=tool.id,
            call_id=call_id or new_id("call"),
            message_id=message_id,
            agent=agent,
            model=model,
            editor=editor,
            turn=turn or self._turn_of_child(session.id),
        )
        if session.is_doom_loop(message_id, tool.id, args):
            try:
                await ctx.ask(
                    "doom_loop",
                    [tool.id],
                    [tool.id],
                    {"tool": tool.id, "input": args},
                    title=f"{tool.id} was called 3 times in a row with the same input",
                )
            except ToolError as error:
                return tool.error_result(error.message, error.kind, error.metadata)
        return await tool.run(args, ctx)


def _title(tool_id: str, args: Any) -> str:
    """A turn's title until a client names it: its first call, in a few words."""
    if isinstance(args, dict):
        for key in ("description", "command", "filePath", "pattern"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return f"{tool_id}: {value[:60]}"
    return tool_id
