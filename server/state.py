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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from server.options import InitOptions, parse_options
from server.threads import in_daemon_thread
from server.watch import PollingWatcher
from tools.config.effective import Config
from tools.config.errors import ConfigProblem
from tools.config.files import LoadedConfig, config_paths
from tools.config.loosening import held, loosenings
from tools.custom.discovery import digest
from tools.errors import ToolError
from tools.fsio.paths import relative
from tools.host import ToolHost, new_id
from tools.permission.asks import PermissionRequest
from tools.permission.trust import Trust, decide
from tools.permission.trust import trust as trust_folder
from tools.worktree import (
    custom_notice,
    read_config,
    recover_interrupted_changes,
    reload_custom,
    untrusted_notice,
)

if TYPE_CHECKING:
    from server.client import EditorClient

log = logging.getLogger("toolhost.server")

LIST_CHANGED = "tools/listChanged"
CONFIG, CUSTOM = "config", "custom"


def _digests(paths: Any) -> dict[Path, str | None]:
    return {Path(p): digest(Path(p)) for p in paths}


def pending_notice(change: str) -> str:
    return (
        f"toolhost: a change on disk that allows more waits for your yes ({change}). "
        "Until you say yes, what it allows does not apply; what it forbids already does."
    )


def declined_notice(change: str) -> str:
    """After a person said no: what holds now, and what a restart would do."""
    return (
        f"toolhost: the change you did not accept ({change}) stays off while toolhost runs; "
        "what it forbids still applies. The files are read as they are at the next start, "
        "so undo the change on disk if it should never apply."
    )


@dataclass
class ServerState:
    options: InitOptions
    host: ToolHost
    session_id: str  # for calls that name no session
    trust: Trust = field(default_factory=lambda: Trust(True, "", "nothing to trust"))
    loaded: LoadedConfig | None = None
    _server: EditorClient | None = field(default=None, repr=False)
    _loading: asyncio.Task[None] | None = field(default=None, repr=False)
    _watcher: PollingWatcher | None = field(default=None, repr=False)
    _shown: set[str] = field(default_factory=set, repr=False)  # notices on screen
    # The config a person accepted (the first load, or a change they said yes to), the
    # digests of its files, and what waits for their yes (for the notices).
    accepted: Config | None = None
    pending_change: str | None = None
    _accepted_files: dict[Path, str | None] = field(default_factory=dict, repr=False)
    _asking: asyncio.Task[None] | None = field(default=None, repr=False)
    _first_apply: bool = field(default=True, repr=False)
    _logged: set[ConfigProblem] = field(default_factory=set, repr=False)
    # Also told when the list changes: the clients attached over the socket (server.attach).
    listeners: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @classmethod
    def build(cls, raw_options: Any, worktree: Path, trusted_by_cli: bool = False) -> ServerState:
        options, problems = parse_options(raw_options)
        for problem in problems:
            if problem != options.config_error:  # load_config reports that one
                log.warning("%s", problem)
        # Decided once, at start (tools.permission.trust): the editor's word, --trusted, else
        # the store.
        trust = decide(worktree, options.trusted, trusted_by_cli)
        log.info("folder %s: %s", "trusted" if trust else "not trusted", trust.reason)
        # Calls wait for ready() (the files read), so no call runs under this config.
        host = ToolHost(
            worktree,
            config=options.config,
            permission_defaults=list(options.permission_defaults),
            trusted=trust.trusted,
            track_outside=True,
        )
        return cls(options, host, options.session_id or new_id("ses"), trust=trust)

    # -- lifecycle ------------------------------------------------------------

    def start(self, server: EditorClient) -> None:
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
        from server.after_the_fact import watch

        # A turn's changes made outside toolhost, offered for review when it ends.
        watch(self.host, self.options, server)
        self._loading = asyncio.get_running_loop().create_task(self._load(), name="toolhost-load")

    async def ready(self) -> None:
        """Return once the config files and custom tools have been loaded the first time."""
        loading = self._loading
        if loading is None or (
            loading.done() and not loading.cancelled() and not loading.exception()
        ):
            return  # every call after the first load: no shield to build
        # Shielded: a cancelled tools/list must not cancel the load others wait on.
        await asyncio.shield(loading)

    def stop(self) -> None:
        """Stop watching and loading; stop the Node.js host of JS/TS tools."""
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        if self._asking is not None and not self._asking.done():
            self._asking.cancel()
        self.host.checkpoints.end_all()  # each open turn's summary, before the process goes
        self.host.close()

    # -- loading --------------------------------------------------------------

    async def _load(self) -> None:
        # One worker thread for the three steps: every thread start is a wait of the
        # loop's, and the first calls wait for all three anyway.
        recovered, loaded = await in_daemon_thread(self._first_load)
        for line in recovered:
            log.warning("recovery: %s", line)
            if self._server is not None:
                self._server.window_show_message(
                    types.ShowMessageParams(
                        type=types.MessageType.Warning, message=f"toolhost: {line}"
                    )
                )
        # What this start loaded is what the person opened; from now on, a change that
        # loosens anything (or new tool code) waits for their yes.
        self.host.custom.hold_changes()
        self._apply(loaded)
        self._report()
        log.info("serving %s (%d tools)", self.host.worktree, len(self.host.registry.tools))

    async def _changed(self, groups: set[str]) -> None:
        await self.ready()
        changed = False
        if CONFIG in groups:
            changed |= self._apply(await in_daemon_thread(self._read_config))
        if CUSTOM in groups:
            changed |= await in_daemon_thread(self._reload_custom)  # removals apply at once
            held = await in_daemon_thread(self.host.custom.held)
            if held:
                self._ask_later(self._accept_tools(held))
        self._report()
        if changed:
            self._list_changed()

    def _list_changed(self) -> None:
        if self._server is not None:
            log.info("config or custom tools changed on disk: sending %s", LIST_CHANGED)
            self._server.protocol.notify(LIST_CHANGED, {})
            for listener in self.listeners:
                listener()

    async def reload_config(self) -> None:
        """Read the config files again now (after toolhost itself changed one)."""
        await self._changed({CONFIG})

    def _first_load(self) -> tuple[list[str], LoadedConfig]:
        """Blocking: what a killed sidecar left half done undone (before any call runs),
        then the config files read and the custom tools loaded."""
        recovered = recover_interrupted_changes()
        loaded = self._read_config()
        self._reload_custom()
        return recovered, loaded

    def _read_config(self) -> LoadedConfig:
        return read_config(self.host.worktree, self.options.raw_config, trusted=self.trust.trusted)

    def _reload_custom(self) -> bool:
        return reload_custom(self.host)

    def _apply(self, loaded: LoadedConfig) -> bool:
        """Use ``loaded``, unless it loosens what was accepted; True when the config in
        force changed.

        The first load is accepted as it is.  Later, a config that only tightens (or
        is failing closed: a broken file) applies at once; one that loosens anything
        is held (``tools.config.loosening.held``: the accepted config plus the new
        one's restrictions) until a person accepts it (``_accept_config``).
        """
        new: Config = loaded.config
        self.loaded = loaded
        if self.accepted is None:
            self._accept(new, loaded)
            config = new
        else:
            loosens = loosenings(self.accepted, new, [t.id for t in self.host.registry.tools])
            if not new.failing_closed and self._only_own_writes(loaded):
                # toolhost saved (or removed) a rule a person just chose: that was their yes,
                # and the folder's files as they are now are what they trust.
                if loosens:
                    log.info("config: the rule a person chose is in force: %s", "; ".join(loosens))
                loosens = []
                if self.trust:  # never makes an untrusted folder trusted
                    self._trust_what_was_accepted()
            if not loosens:
                if self._asking is not None and not self._asking.done():
                    self._asking.cancel()  # what it asked about is no longer on disk
                    self.pending_change = None
                if not new.failing_closed:
                    self._accept(new, loaded)
                config = new if not new.failing_closed else held(self.accepted, new)
            else:
                config = held(self.accepted, new)
                if not new.failing_closed:  # a broken file is reported, not offered
                    self._ask_later(self._accept_config(new, loaded, loosens))
        changed = config != self.host.config or self._first_apply
        self._first_apply = False
        self.host.set_config(config)
        return changed

    def _only_own_writes(self, loaded: LoadedConfig) -> bool:
        """True when every config file that differs from the accepted one got there by
        toolhost's own writes of rules a person chose (``tools.config.saved``), made on
        top of the accepted content; any other change needs a person."""
        own_write = self.host.permissions.store.own_write
        now = _digests(loaded.files)
        changed = [
            p for p in {*now, *self._accepted_files} if now.get(p) != self._accepted_files.get(p)
        ]
        return bool(changed) and all(
            own_write(p, self._accepted_files.get(p), now.get(p)) for p in changed
        )

    def _accept(self, config: Config, loaded: LoadedConfig) -> None:
        self.accepted = config
        self._accepted_files = _digests(loaded.files)
        self.pending_change = None
        store = self.host.permissions.store
        for path in config_paths(self.host.worktree):
            store.settled(path, self._accepted_files.get(path))

    def _ask_later(self, asking: Any) -> None:
        """Ask in the background (a person may take minutes); a newer change cancels it."""
        if self._asking is not None and not self._asking.done():
            self._asking.cancel()
        self._asking = asyncio.get_running_loop().create_task(asking, name="toolhost-accept")

    async def _accept_config(self, new: Config, loaded: LoadedConfig, loosens: list[str]) -> None:
        changed = [p for p, d in _digests(loaded.files).items() if self._accepted_files.get(p) != d]
        changed += [p for p in self._accepted_files if p not in loaded.files]
        files = [relative(p, self.host.worktree) for p in dict.fromkeys(changed)] or ["config"]
        self.pending_change = f"{', '.join(files)}: {'; '.join(loosens)}"
        title = (
            f"The config on disk changed ({', '.join(files)}) and now allows more: "
            f"{'; '.join(loosens)}. Apply it? Until you do, the config you had stays in "
            "force, with the new restrictions added."
        )
        if await self._ask_person("config", files, title, {"files": files, "loosens": loosens}):
            if self.loaded is loaded:  # still what is on disk
                self._accept(new, loaded)
                self.host.set_config(new)
                self._trust_what_was_accepted()
                log.info("config change accepted: %s", "; ".join(loosens))
                self._list_changed()
        else:
            log.warning("config change not applied (not accepted): %s", "; ".join(loosens))
            self._tell(declined_notice(self.pending_change))
            self.pending_change = None
        self._report()

    async def _accept_tools(self, held_files: list[Path]) -> None:
        files = [relative(p, self.host.worktree) for p in held_files]
        self.pending_change = f"custom tools {', '.join(files)}"
        title = (
            f"New or changed custom tool files: {', '.join(files)}. Load them? Loading runs "
            "their code in toolhost; until you say yes they are not loaded."
        )
        if await self._ask_person("config", files, title, {"toolFiles": files}):
            self.host.custom.accept(held_files)
            self.pending_change = None
            if await in_daemon_thread(self._reload_custom):
                self._trust_what_was_accepted()
                self._list_changed()
        else:
            log.warning("custom tool files not loaded (not accepted): %s", ", ".join(files))
            self._tell(declined_notice(self.pending_change))
            self.pending_change = None
        self._report()

    async def _ask_person(
        self, permission: str, patterns: list[str], title: str, metadata: dict[str, Any]
    ) -> bool:
        """True when the editor's person said yes; no one to ask is a no."""
        if self._server is None:
            return False
        from server.bridge import LspEditorBridge

        request = PermissionRequest(
            session_id=self.session_id,
            call_id=new_id("config"),
            message_id="",
            tool="toolhost",
            permission=permission,
            patterns=patterns,
            always=[],
            title=title,
            metadata={"configChange": metadata, "protected": True},
        )
        try:
            reply = await LspEditorBridge(self._server, self.options).ask_permission(request)
        except ToolError as error:
            log.info("nobody accepted the change: %s", error.message)
            return False
        return reply.reply in ("once", "always")

    def _tell(self, notice: str) -> None:
        if self._server is not None:
            self._server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=notice)
            )

    def _trust_what_was_accepted(self) -> None:
        """A person accepted the folder's files as they are now: if the trust store is what
        trusts this folder, it trusts these files from now on."""
        if self.trust.source in ("store", "nothing to trust"):
            with contextlib.suppress(OSError):
                trust_folder(self.host.worktree)

    # -- problems -------------------------------------------------------------

    def problem_notices(self) -> dict[str, types.MessageType]:
        """Every current problem as one sentence for a person, with its severity."""
        notices: dict[str, types.MessageType] = {}
        if not self.trust:
            others = any(not tool.annotations.read_only for tool in self.host.offered())
            notices[untrusted_notice(self.trust, others)] = types.MessageType.Warning
        if self.loaded is not None:
            for notice in self.loaded.notices():
                notices[notice] = types.MessageType.Error  # the config is failing closed
            for warning in self.loaded.warnings:
                notices[warning] = types.MessageType.Warning
        for problem in self.host.custom_problems:
            notices[custom_notice(problem)] = types.MessageType.Warning
        if self.pending_change is not None:
            notices[pending_notice(self.pending_change)] = types.MessageType.Warning
        return notices

    def _report(self) -> None:
        """Log new config problems and show each new notice once.

        A problem that is fixed and later comes back is shown again.
        """
        problems = set(self.loaded.problems) if self.loaded is not None else set()
        for problem in sorted(problems - self._logged, key=str):
            log.warning(
                "config: %s (until it is fixed, every tool asks first and every denial holds)",
                problem,
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
