"""``toolhost mcp`` on its own: a ToolHost for the working directory.

The same config files, permissions and custom tools as the sidecar
(``tools.worktree``), watched the same way (``server.watch``): a change re-reads
them and tells the MCP client the list changed.  With no editor, a permission ask
goes to the MCP client as an elicitation when it declared that it can show one;
otherwise the call is rejected with a message that says how to allow it.

The tool framework is imported in the loading thread, after the MCP handshake has
been answered.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.mcp.backend import CallHooks, Changed
from server.threads import in_daemon_thread
from server.watch import PollingWatcher

if TYPE_CHECKING:
    from tools.config.effective import Config
    from tools.config.files import LoadedConfig
    from tools.host import ToolHost
    from tools.model import ModelRef
    from tools.permission.trust import Trust

log = logging.getLogger("toolhost.mcp")

CONFIG, CUSTOM = "config", "custom"
# How much of an edit's diff an elicitation shows before it says "and more".
DIFF_CHARS = 4000


class LocalBackend:
    def __init__(
        self,
        directory: Path,
        *,
        session_id: str,
        agent: str = "build",
        model: tuple[str, str] | None = None,
        trusted: bool = False,
    ) -> None:
        self.directory = directory
        self.trusted_by_cli = trusted  # --trusted: the person who started it trusts the folder
        self.trust: Trust | None = None
        self._accepted: Config | None = None
        self.session_id = session_id
        self.agent = agent
        self._model = model
        self.on_changed: Changed | None = None
        self._host: ToolHost | None = None
        self._loaded: LoadedConfig | None = None
        self._loading: asyncio.Task[None] | None = None
        self._watcher: PollingWatcher | None = None
        self._reported: set[str] = set()

    @property
    def describe(self) -> str:
        return f"{self.directory} (not attached to an editor)"

    # -- loading --------------------------------------------------------------

    async def start(self) -> None:
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._load())

    async def _ready(self) -> ToolHost:
        await self.start()
        assert self._loading is not None
        await asyncio.shield(self._loading)
        assert self._host is not None
        return self._host

    async def _load(self) -> None:
        host, files, folders = await in_daemon_thread(self._prepare)
        self._host = host
        # The baseline is taken before the first load, so an edit made while it runs is seen.
        self._watcher = PollingWatcher(files, folders, self._changed)
        self._watcher.start()
        loaded, _ = await asyncio.gather(
            in_daemon_thread(self._read_config), in_daemon_thread(self._reload_custom)
        )
        # What this start loaded is what the person started; later tool code, and any
        # config change that loosens a rule, waits (as in the sidecar, server.state).
        host.custom.hold_changes()
        self._apply(loaded)
        self._report()
        log.info("serving %s (%d tools)", host.worktree, len(host.registry.tools))

    def _prepare(self) -> tuple[ToolHost, dict[str, list[Path]], dict[str, list[Path]]]:
        from tools.config.files import config_paths
        from tools.host import ToolHost
        from tools.permission.trust import decide

        self.trust = decide(self.directory, None, self.trusted_by_cli)
        log.info("folder %s: %s", "trusted" if self.trust else "not trusted", self.trust.reason)
        # No tools/call runs before the first load has applied the project's config.
        host = ToolHost(self.directory, trusted=self.trust.trusted, track_outside=True)
        return host, {CONFIG: config_paths(host.worktree)}, {CUSTOM: host.custom_watch_dirs()}

    def _read_config(self) -> LoadedConfig:
        from tools.worktree import read_config

        assert self._host is not None and self.trust is not None
        return read_config(self._host.worktree, trusted=self.trust.trusted)

    def _reload_custom(self) -> bool:
        from tools.worktree import reload_custom

        assert self._host is not None
        return reload_custom(self._host)

    def _apply(self, loaded: LoadedConfig) -> bool:
        """Use ``loaded``; a change that loosens what this start accepted is held.

        Alone, there is no editor to accept it: its restrictions apply at once, and
        what it allows only after ``toolhost trust`` and a new ``toolhost mcp``.
        """
        from tools.config.loosening import held, loosenings

        assert self._host is not None
        config = loaded.config
        if self._accepted is None:
            self._accepted = config
        else:
            ids = [tool.id for tool in self._host.registry.tools]
            loosens = loosenings(self._accepted, config, ids)
            if loosens or config.failing_closed:
                if loosens:
                    log.warning(
                        "a config change that allows more is held (%s): its restrictions "
                        "apply now; to accept it, run `toolhost trust` in %s and start "
                        "toolhost mcp again",
                        loosens[0],
                        self.directory,
                    )
                config = held(self._accepted, config)
            else:
                self._accepted = config
        changed = self._loaded is None or config != self._host.config
        self._loaded = loaded
        self._host.set_config(config)
        return changed

    async def _changed(self, groups: set[str]) -> None:
        await self._ready()
        changed = False
        if CONFIG in groups:
            changed |= self._apply(await in_daemon_thread(self._read_config))
        if CUSTOM in groups:
            changed |= await in_daemon_thread(self._reload_custom)  # removals apply at once
            assert self._host is not None
            for path in await in_daemon_thread(self._host.custom.held):
                log.warning(
                    "the new tool file %s is not loaded: tool code that appears while toolhost "
                    "mcp runs needs a person's yes (start toolhost mcp again, or open the "
                    "folder in an editor running toolhost)",
                    path,
                )
        self._report()
        if changed and self.on_changed is not None:
            log.info("config or custom tools changed on disk: the tool list changed")
            await self.on_changed()

    def _report(self) -> None:
        """Each problem once on stderr (an MCP host shows it in its server log)."""
        from tools.worktree import problem_lines

        assert self._host is not None and self._loaded is not None
        lines = set(problem_lines(self._loaded, self._host))
        for line in sorted(lines - self._reported):
            log.warning("%s", line)
        self._reported = lines

    # -- serving --------------------------------------------------------------

    def _model_ref(self) -> ModelRef | None:
        from tools.model import ModelRef

        return ModelRef(*self._model) if self._model else None

    async def list_tools(self) -> list[dict[str, Any]]:
        host = await self._ready()
        from server import calls
        from tools.editor import EditorBridge

        return calls.listing(
            host,
            model=self._model_ref(),
            capabilities=EditorBridge().capabilities(),
            agent=self.agent,
            session_id=self.session_id,
        )

    async def call(self, tool: str, args: dict[str, Any], hooks: CallHooks) -> dict[str, Any]:
        host = await self._ready()
        from server import calls

        return await calls.execute(
            host,
            tool,
            args,
            editor=mcp_bridge(hooks),
            session_id=self.session_id,
            agent=self.agent,
            model=self._model_ref(),
            turn_id=hooks.turn,
        )

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        if self._host is not None:
            self._host.close()


def mcp_bridge(hooks: CallHooks) -> Any:
    """An EditorBridge whose asks go to the MCP client and whose progress is reported."""
    from tools.editor import EditorBridge
    from tools.errors import PermissionRejectedError
    from tools.permission.asks import PermissionReply, PermissionRequest

    class McpBridge(EditorBridge):
        async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
            if hooks.elicit is None:
                raise PermissionRejectedError(no_one_to_ask(request.permission, request.patterns))
            answer = await hooks.elicit(request.to_wire())
            if answer is None:
                raise PermissionRejectedError(no_one_to_ask(request.permission, request.patterns))
            return PermissionReply(answer["reply"], answer.get("message"))

        def notify_update(self, update: dict[str, Any]) -> None:
            hooks.progress(update)

    return McpBridge()


def no_one_to_ask(permission: str, patterns: list[str]) -> str:
    example = {"permission": {permission: {patterns[0] if patterns else "*": "allow"}}}
    return (
        f"This call needs the `{permission}` permission for {', '.join(patterns)}, and no one "
        "could be asked: this MCP client cannot show a prompt (it did not declare the "
        "elicitation capability) and toolhost mcp is not attached to an editor. It was not "
        f"run. A user can allow it in opencode.json, e.g. {json.dumps(example)}, or open this "
        "folder in an editor running toolhost, whose review prompts toolhost mcp then uses."
    )
