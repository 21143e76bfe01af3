"""The toolhost sidecar behind the proxy: the editor's, or one the proxy starts.

Attached (an editor's sidecar has the folder open), every call runs there, so the
review is the editor's own window and reads see its unsaved buffers.  Standalone,
the proxy starts ``toolhost serve`` for the folder and is that sidecar's editor: it
answers ``permission/ask`` itself, by asking the ACP client (``server.acp.reviews``).
Either way a call reaches the sidecar over its attach socket (``server.attach``),
one authenticated connection per caller, under the ACP session's toolhost session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from server import lockfile
from server.attach.rpc import Peer, connect_unix
from server.lockfile import LockInfo

log = logging.getLogger("toolhost.acp")

CONNECT_SECONDS = 10.0
START_SECONDS = 60.0
REVIEW_DEFAULTS = {"edit": "ask", "bash": "ask"}  # the editors' review by default

AskHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def toolhost_command() -> list[str]:
    """This toolhost, by absolute path (ACP wants an absolute command; the editors install
    toolhost into a private venv that is not on PATH)."""
    script = Path(sys.executable).with_name("toolhost")
    if script.exists():
        return [str(script)]
    found = shutil.which("toolhost")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "server.cli"]


async def connect(
    lock: LockInfo,
    session_id: str,
    notifications: Mapping[str, Callable[[Any], None]],
    defaults: Mapping[str, Any] | None = None,
) -> Peer:
    """An initialized attach connection to ``lock``'s sidecar, calling as ``session_id``;
    ``defaults``: the caller's ``agent`` and ``model``."""
    peer = Peer(notifications=notifications)
    assert lock.socket is not None
    await connect_unix(lock.socket, peer, CONNECT_SECONDS)
    options: dict[str, Any] = {**(defaults or {}), "token": lock.token, "sessionID": session_id}
    await asyncio.wait_for(
        peer.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "toolhost acp"},
                "capabilities": {},
                "initializationOptions": options,
            },
        ),
        CONNECT_SECONDS,
    )
    peer.notify("initialized", {})
    return peer


class OwnSidecar:
    """A ``toolhost serve`` for one folder, with the proxy as its editor."""

    def __init__(self, folder: Path, on_ask: AskHandler, *, review: bool) -> None:
        self.folder = folder
        self.on_ask = on_ask
        self.review = review
        self.runtime = Path(tempfile.mkdtemp(prefix="toolhost-acp-sidecar-"))
        os.chmod(self.runtime, 0o700)  # XDG wants exactly 0700
        self.process: asyncio.subprocess.Process | None = None
        self.lock: LockInfo | None = None
        self.peer = Peer(
            {
                "permission/ask": self._ask,
                "window/workDoneProgress/create": _null,
                "client/registerCapability": _null,
                "window/showMessageRequest": _null,
                "workspace/configuration": _no_configuration,
            },
            {"window/logMessage": _log_message},
        )

    @property
    def editor(self) -> str:
        return "toolhost acp"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        to_child, from_us = os.pipe()
        to_us, from_child = os.pipe()
        env = {**os.environ, "XDG_RUNTIME_DIR": str(self.runtime)}
        self.process = await asyncio.create_subprocess_exec(
            *toolhost_command(),
            "serve",
            cwd=self.folder,
            env=env,
            stdin=to_child,
            stdout=from_child,
        )
        os.close(to_child)
        os.close(from_child)
        await loop.connect_read_pipe(self.peer.protocol, os.fdopen(to_us, "rb"))
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(from_us, "wb"))
        self.peer.transport = writer
        options: dict[str, Any] = {"editor": {"permissionAsk": True}}
        if self.review:
            options["permissionDefaults"] = REVIEW_DEFAULTS
        uri = self.folder.as_uri()
        await asyncio.wait_for(
            self.peer.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "clientInfo": {"name": self.editor},
                    "rootUri": uri,
                    "workspaceFolders": [{"uri": uri, "name": self.folder.name}],
                    "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
                    "initializationOptions": options,
                },
            ),
            START_SECONDS,
        )
        self.peer.notify("initialized", {})
        self.lock = await self._find_lock()

    async def _find_lock(self) -> LockInfo:
        """The sidecar's lock file, which it writes once its attach socket listens."""
        assert self.process is not None
        directory = self.runtime / "toolhost"
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.returncode is not None:
                break
            with contextlib.suppress(OSError):
                for lock in lockfile.discover(directory=directory):
                    if lock.pid == self.process.pid and lock.socket:
                        return lock
            await asyncio.sleep(0.05)
        raise RuntimeError(
            f"toolhost serve for {self.folder} did not open its attach socket "
            f"(exit status {self.process.returncode})"
        )

    async def _ask(self, params: Any) -> dict[str, Any]:
        return await self.on_ask(params if isinstance(params, dict) else {})

    async def close(self) -> None:
        self.peer.close()
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                self.process.kill()
        shutil.rmtree(self.runtime, ignore_errors=True)


async def _null(params: Any) -> None:
    return None


async def _no_configuration(params: Any) -> list[None]:
    items = params.get("items") if isinstance(params, dict) else None
    return [None] * len(items or [])


def _log_message(params: Any) -> None:
    if isinstance(params, dict):
        log.info("sidecar: %s", params.get("message"))
