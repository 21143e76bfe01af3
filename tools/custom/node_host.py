"""The JS/TS host process of one ToolHost: started on first use, loads and calls, closed.

The process is one ``node/host.mjs`` run by the chosen runtime (``node_runtime``),
spoken to through a ``Channel`` (``node_channel``). A call that does not stop within
``ABORT_GRACE_SECONDS`` of its abort gets the process killed; the next call starts a
fresh one. When the tool files change, the host is retired: it takes no new work and
ends once its calls in flight finish.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import os
import subprocess
import threading
import weakref
from pathlib import Path
from typing import Any

from tools.context import ToolContext
from tools.custom.node_channel import Channel, HostFailed, PendingCall
from tools.custom.node_runtime import Runtime, cache_dir

log = logging.getLogger("toolhost.custom.node")

HOST_SCRIPT = Path(__file__).with_name("node") / "host.mjs"
ABORT_GRACE_SECONDS = 2.0
START_TIMEOUT_SECONDS = 15.0
LOAD_TIMEOUT_SECONDS = 120.0


def _stop_quietly(channel: Channel) -> None:
    with contextlib.suppress(Exception):
        channel.stop()


class NodeHost:
    """Loads and runs JS/TS tools for one ToolHost; the process starts on first use."""

    def __init__(self, runtime: Runtime | str, cwd: Path, cache: Path | None = None) -> None:
        if isinstance(runtime, str):  # a node binary, as before runtimes were chosen
            runtime = Runtime("node", runtime, "")
        self.runtime = runtime
        self.cwd = cwd
        self.cache = cache or cache_dir()
        self._channel: Channel | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._retired = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _running(self) -> Channel:
        with self._lock:
            channel = self._channel
            if channel is not None and not channel.dead:
                return channel
            if self._retired:
                raise HostFailed("the tool files changed, and this JS/TS host was retired")
            channel = self._start()
            self._channel = channel
            return channel

    def _argv(self) -> list[str]:
        if self.runtime.kind == "bun":
            # --no-install: a missing package is an error here, never a download.
            return [self.runtime.path, "--no-install", str(HOST_SCRIPT)]
        return [self.runtime.path, "--enable-source-maps", str(HOST_SCRIPT)]

    def _start(self) -> Channel:
        read_fd, write_fd = os.pipe()
        env = {
            **os.environ,
            "TOOLHOST_NODE_CACHE": str(self.cache),
            "TOOLHOST_PROTOCOL_FD": str(write_fd),
        }
        try:
            proc = subprocess.Popen(
                self._argv(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                cwd=self.cwd,
                env=env,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        incoming = open(read_fd, encoding="utf-8", errors="replace")  # noqa: SIM115
        channel = Channel(proc, incoming)
        for target in (channel.read, channel.drain_output):
            threading.Thread(target=target, name="toolhost-js-host", daemon=True).start()
        if self._finalizer is not None:
            self._finalizer.detach()
        # A host dropped without close() still ends its process (and at interpreter exit).
        self._finalizer = weakref.finalize(self, _stop_quietly, channel)
        try:
            channel.hello.result(timeout=START_TIMEOUT_SECONDS)
        except (HostFailed, concurrent.futures.TimeoutError) as error:
            channel.stop(kill=True)
            reason = str(error) or channel.exit_reason()
            raise HostFailed(f"the JS/TS host did not start: {reason}") from None
        return channel

    def load(self, files: list[Path]) -> dict[Path, dict[str, Any]]:
        """Each file's ``loaded`` answer (``tools``, ``problems`` or ``error``)."""
        channel = self._running()
        waiting: dict[Path, concurrent.futures.Future[dict[str, Any]]] = {}
        for path in files:
            request_id = next(self._ids)
            waiting[path] = channel.loads[request_id] = concurrent.futures.Future()
            channel.send({"type": "load", "id": request_id, "file": str(path)})
        answers: dict[Path, dict[str, Any]] = {}
        for path, future in waiting.items():
            try:
                answers[path] = future.result(timeout=LOAD_TIMEOUT_SECONDS)
            except concurrent.futures.TimeoutError:
                answers[path] = {"error": f"loading took longer than {LOAD_TIMEOUT_SECONDS:.0f} s"}
            except HostFailed as error:
                answers[path] = {"error": str(error)}
        return answers

    async def call(self, request: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        channel = await asyncio.to_thread(self._running)
        loop = asyncio.get_running_loop()
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        channel.calls[call_id] = PendingCall(loop, future, ctx)
        try:
            channel.send({**request, "type": "call", "id": call_id})
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            ctx.abort.abort()
            with contextlib.suppress(HostFailed):
                channel.send({"type": "abort", "id": call_id})
            await asyncio.wait({future}, timeout=ABORT_GRACE_SECONDS)
            if not future.done():
                log.warning(
                    "JS/TS tool %s ignored its abort for %.0f s; restarting the JS/TS host",
                    ctx.tool,
                    ABORT_GRACE_SECONDS,
                )
                await asyncio.to_thread(self._kill, channel)
            raise
        finally:
            channel.calls.pop(call_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: a late failure is not "never retrieved"
            if self._retired and not channel.calls:
                self.close()

    def _kill(self, channel: Channel) -> None:
        with self._lock:
            if self._channel is channel:
                self._channel = None
        channel.stop(kill=True)

    def retire(self) -> None:
        """Stop taking work (the files changed); end the process once its calls finish."""
        self._retired = True
        channel = self._channel
        if channel is None or not channel.calls:
            self.close()

    def close(self) -> None:
        with self._lock:
            channel, self._channel = self._channel, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if channel is not None:
            channel.stop()
