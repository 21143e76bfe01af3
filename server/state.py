"""What a connection knows after ``initialize``: options, the ToolHost, defaults.

Built on the first call that needs it (normally the ``initialized`` notification),
not inside ``initialize``: it loads the tool framework and the built-in tools,
which would otherwise delay the ``initialize`` answer.

``start`` then reads the config files and loads the custom tools in worker threads
(``tools/list`` and ``tools/execute`` wait for that first load: a call must never run
under the permissive defaults before the project's rules are known), and watches
both for changes: a change re-reads them and sends ``tools/listChanged``.  Each
problem (a broken config file, a custom tool file that does not load) is logged and
shown once with ``window/showMessage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types

from server.options import InitOptions, harden, parse_options
from server.watch import PollingWatcher
from tools.config.files import LoadedConfig, config_paths
from tools.config.rules import Config, ConfigProblem
from tools.host import ToolHost, new_id
from tools.worktree import custom_notice, read_config, reload_custom

if TYPE_CHECKING:
    from server.app import ToolhostServer

log = logging.getLogger("toolhost.server")

T = TypeVar("T")

LIST_CHANGED = "tools/listChanged"
CONFIG, CUSTOM = "config", "custom"


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a daemon thread, awaited.

    Not ``asyncio.to_thread``: loading custom tools may run npm for minutes, and
    ``asyncio.run`` waits for its executor's threads before the process may exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the awaiting task was cancelled
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = fn()
        except BaseException as raised:  # handed to the awaiting task
            error = raised
        # RuntimeError: the loop has closed, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"toolhost-{fn.__name__}", daemon=True).start()
    return await future


@dataclass
class ServerState:
    options: InitOptions
    host: ToolHost
    session_id: str  # for calls that name no session
    loaded: LoadedConfig | None = None
    _server: ToolhostServer | None = field(default=None, repr=False)
    _loading: asyncio.Task[None] | None = field(default=None, repr=False)
    _watcher: PollingWatcher | None = field(default=None, repr=False)
    _shown: set[str] = field(default_factory=set, repr=False)  # notices on screen
    _logged: set[ConfigProblem] = field(default_factory=set, repr=False)

    @classmethod
    def build(cls, raw_options: Any, worktree: Path) -> ServerState:
        options, problems = parse_options(raw_options)
        for problem in problems:
            if problem != options.config_error:  # load_config reports that one
                log.warning("%s", problem)
        # Calls wait for ready() (the files read), so no call runs under this config.
        host = ToolHost(
            worktree,
            config=options.config,
            permission_defaults=list(options.permission_defaults),
        )
        return cls(options, host, options.session_id or new_id("ses"))

    # -- lifecycle ------------------------------------------------------------

    def start(self, server: ToolhostServer) -> None:
        """Load config and custom tools in the background, and start watching them."""
        if self._loading is not None:
            return
        self._server = server
        # The baseline is taken before the first load, so an edit made while it runs
        # is seen.  config_paths is exactly what load_config reads (LoadedConfig.watch).
        self._watcher = PollingWatcher(
            {CONFIG: config_paths(self.host.worktree)},
            {CUSTOM: self.host.custom_watch_dirs()},
            self._changed,
        )
        self._watcher.start()
        self._loading = asyncio.get_running_loop().create_task(self._load(), name="toolhost-load")

    async def ready(self) -> None:
        """Return once the config files and custom tools have been loaded the first time."""
        if self._loading is not None:
            # Shielded: a cancelled tools/list must not cancel the load others wait on.
            await asyncio.shield(self._loading)

    def stop(self) -> None:
        """Stop watching and loading; stop the Node.js host of JS/TS tools."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        self.host.close()

    # -- loading --------------------------------------------------------------

    async def _load(self) -> None:
        config = in_daemon_thread(self._read_config)
        custom = in_daemon_thread(self._reload_custom)
        loaded, _ = await asyncio.gather(config, custom)
        self._apply(loaded)
        self._report()
        log.info("serving %s (%d tools)", self.host.worktree, len(self.host.registry.tools))

    async def _changed(self, groups: set[str]) -> None:
        await self.ready()
        changed = False
        if CONFIG in groups:
            changed |= self._apply(await in_daemon_thread(self._read_config))
        if CUSTOM in groups:
            changed |= await in_daemon_thread(self._reload_custom)
        self._report()
        if changed and self._server is not None:
            log.info("config or custom tools changed on disk: sending %s", LIST_CHANGED)
            self._server.protocol.notify(LIST_CHANGED, {})

    async def reload_config(self) -> None:
        """Read the config files again now (after toolhost itself changed one)."""
        await self._changed({CONFIG})

    def _read_config(self) -> LoadedConfig:
        return read_config(self.host.worktree, self.options.raw_config)

    def _reload_custom(self) -> bool:
        return reload_custom(self.host)

    def _apply(self, loaded: LoadedConfig) -> bool:
        """Use ``loaded``; True when the effective config changed."""
        config: Config = loaded.config
        if self.options.config_error:  # keep the invalid init config's denies
            config = harden(config, self.options.raw_config)
        changed = self.loaded is None or config != self.host.config
        self.loaded = loaded
        self.host.set_config(config)
        return changed

    # -- problems -------------------------------------------------------------

    def problem_notices(self) -> dict[str, types.MessageType]:
        """Every current problem as one sentence for a person, with its severity."""
        notices: dict[str, types.MessageType] = {}
        if self.loaded is not None:
            for notice in self.loaded.notices():
                notices[notice] = types.MessageType.Error  # the config is failing closed
        for problem in self.host.custom_problems:
            notices[custom_notice(problem)] = types.MessageType.Warning
        return notices

    def _report(self) -> None:
        """Log new config problems and show each new notice once.

        A problem that is fixed and later comes back is shown again.
        """
        problems = set(self.loaded.problems) if self.loaded is not None else set()
        for problem in sorted(problems - self._logged, key=str):
            log.warning(
                "config: %s (until it is fixed, edits, commands and fetches ask first)", problem
            )
        self._logged = problems
        notices = self.problem_notices()
        if self._server is not None:
            for notice, kind in notices.items():
                if notice not in self._shown:
                    self._server.window_show_message(
                        types.ShowMessageParams(type=kind, message=notice)
                    )
        self._shown = set(notices)
