"""ToolHost: one worktree's tools, sessions, permissions and config, editor-agnostic.

The server and ``toolhost run`` both call ``ToolHost.execute``; the editor they
sit in reaches tools only through the ``EditorBridge`` passed per call.
"""

from __future__ import annotations

import functools
import itertools
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tools.config.rules import Config
from tools.config.saved import ConfigRuleStore
from tools.context import ModelRef, ToolContext
from tools.custom.loader import CustomTools, LoadProblem
from tools.editor import EditorBridge
from tools.errors import ToolError
from tools.permission import (
    AGENT_RULES,
    IndexedRules,
    PermissionService,
    Ruleset,
    default_rules,
    disabled_by_rules,
    permission_name,
    rules_from_config,
)
from tools.registry import Registry
from tools.result import ToolResult
from tools.session import Sessions
from tools.tool import Tool
from tools.truncation import output_dir

_ID_PREFIX = uuid.uuid4().hex[:12]  # unique per process
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
    ) -> None:
        from tools.builtin import builtin_tools, invalid_tool

        self.worktree = Path(os.path.abspath(worktree))
        self.directory = Path(os.path.abspath(directory)) if directory else self.worktree
        self.config = config or Config()
        self.registry = Registry(builtin_tools() if tools is None else tools, invalid_tool())
        self.sessions = Sessions(read_before_write=read_before_write)
        self._rules_cache: dict[str, Ruleset] = {}
        # The editor's defaults (initializationOptions.permissionDefaults): beneath the
        # agent's rules and every config file, above OpenCode's built-in defaults.
        self.permission_defaults: Ruleset = list(permission_defaults or [])
        self.permissions = PermissionService(self._rules_for, ConfigRuleStore(self.worktree))
        # Nothing is read until reload_custom(): construction stays cheap.
        self.custom = CustomTools(self.directory, self.worktree)
        if load_custom:
            self.reload_custom()

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
    def real_roots(self) -> tuple[Path, Path]:
        """The directory and worktree with symlinks resolved (they do not move)."""
        return (Path(os.path.realpath(self.directory)), Path(os.path.realpath(self.worktree)))

    def _rules_for(self, agent: str) -> Ruleset:
        # Built once per agent and config: every ask evaluates against these.
        rules = self._rules_cache.get(agent)
        if rules is None:
            base = [
                *default_rules(output_dir()),
                *self.permission_defaults,
                *rules_from_config(AGENT_RULES.get(agent)),
            ]
            rules = IndexedRules(self.config.effective_rules(base))
            self._rules_cache[agent] = rules
        return rules

    def set_config(self, config: Config) -> None:
        self.config = config
        self._rules_cache.clear()

    def task_available(self, agent: str) -> bool:
        return (
            self.registry.get("task") is not None
            and self.permissions.evaluate(agent, "task", "*").action != "deny"
        )

    def offered(
        self,
        *,
        model: ModelRef | None = None,
        capabilities: frozenset[str] = frozenset(),
        agent: str = "build",
    ) -> list[Tool]:
        """The catalogue for a model, client and agent (an agent's blanket denies hide tools)."""
        offered = self.registry.offered(model=model, config=self.config, capabilities=capabilities)
        rules = self._rules_for(agent)
        return [
            tool.described_for(self)
            for tool in offered
            if not disabled_by_rules(permission_name(tool.id), rules, self.permissions.approved)
        ]

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
    ) -> ToolResult:
        editor = editor or EditorBridge()
        session = self.sessions.get(session_id or new_id("ses"))
        tool = self.registry.get(tool_id)
        if tool is None:
            available = self.offered(model=model, capabilities=editor.capabilities())
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
