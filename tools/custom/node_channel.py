"""The line protocol with ``node/host.mjs``: one process's pipes and the requests on them.

``node/host.mjs`` (shipped with the package, run by Bun or Node.js) loads the files,
turns their zod schemas into JSON Schema and runs ``execute`` on request; messages are
JSON lines on its stdin and on a pipe of its own (``TOOLHOST_PROTOCOL_FD``), with
``ctx.ask``/``ctx.metadata`` sent back to us mid-call. A tool's stdout and stderr
(``console.log``, a ``Bun.$`` that is not quiet) go to the log, never into the
protocol.

A reader thread owns the pipe, so a load can wait from sync code and a call from any
event loop: answers are handed to the loop that asked.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import json
import logging
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, TextIO

from tools.context import ToolContext
from tools.errors import ToolError

log = logging.getLogger("toolhost.custom.node")


class HostFailed(Exception):
    """The Node process died or stopped answering."""


@dataclass
class PendingCall:
    """A call in flight: its context, and the future its event loop awaits."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[dict[str, Any]]
    ctx: ToolContext


@dataclass
class Channel:
    """One Node process and the requests waiting on it; its reader thread holds only this."""

    proc: subprocess.Popen[str]
    incoming: TextIO  # the host's protocol pipe (its stdout and stderr are only logged)
    hello: concurrent.futures.Future[dict[str, Any]] = field(
        default_factory=concurrent.futures.Future
    )
    loads: dict[int, concurrent.futures.Future[dict[str, Any]]] = field(default_factory=dict)
    calls: dict[int, PendingCall] = field(default_factory=dict)
    stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=40))
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    dead: bool = False

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False) + "\n"
        with self.write_lock:
            if self.dead or self.proc.stdin is None:
                raise HostFailed(self.exit_reason())
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
            except (OSError, ValueError):
                raise HostFailed(self.exit_reason()) from None

    def exit_reason(self) -> str:
        code = self.proc.poll()
        tail = " | ".join(line for line in self.stderr if line.strip())[-600:]
        status = "is not running" if code is None else f"exited with code {code}"
        return f"the JS/TS host {status}" + (f" ({tail})" if tail else "")

    def read(self) -> None:
        for line in self.incoming:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                log.debug("node host: %s", line.rstrip())
                continue
            try:
                self.dispatch(message)
            except Exception:  # one odd message must not stop the reader
                log.exception("node host: could not handle %.200s", line)
        self.dead = True
        self.fail_all()

    def drain_output(self) -> None:
        assert self.proc.stdout is not None  # the tools' stdout and stderr, merged
        for line in self.proc.stdout:
            self.stderr.append(line.rstrip())
            log.debug("node host stderr: %s", line.rstrip())

    def dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "hello":
            self.hello.set_result(message)
        elif kind == "loaded":
            waiting = self.loads.pop(message.get("id", -1), None)
            if waiting is not None:
                waiting.set_result(message)
        elif kind == "result":
            call = self.calls.get(message.get("id", -1))
            if call is not None:
                _soon(call.loop, _settle, call.future, message)
        elif kind == "metadata":
            call = self.calls.get(message.get("call", -1))
            update = message.get("input") or {}
            if call is not None and isinstance(update, dict):
                title = update.get("title")
                meta = update.get("metadata")
                _soon(
                    call.loop,
                    call.ctx.metadata,
                    title if isinstance(title, str) else None,
                    meta if isinstance(meta, dict) else {},
                )
        elif kind == "ask":
            call = self.calls.get(message.get("call", -1))
            if call is not None:
                with contextlib.suppress(RuntimeError):
                    asyncio.run_coroutine_threadsafe(self.answer_ask(call, message), call.loop)

    async def answer_ask(self, call: PendingCall, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"type": "askReply", "id": message.get("id")}
        try:
            await call.ctx.ask(*_ask_arguments(message.get("input")))
        except ToolError as error:
            reply["error"] = {"message": error.message, "kind": error.kind}
        except Exception as error:
            reply["error"] = {"message": f"{type(error).__name__}: {error}", "kind": "internal"}
        with contextlib.suppress(HostFailed):
            self.send(reply)

    def fail_all(self) -> None:
        error = HostFailed(self.exit_reason())
        if not self.hello.done():
            self.hello.set_exception(error)
        for waiting in list(self.loads.values()):
            if not waiting.done():
                waiting.set_exception(error)
        for call in list(self.calls.values()):
            _soon(call.loop, _fail, call.future, error)

    def stop(self, *, kill: bool = False) -> None:
        """End the process and close its pipes (closing stdin makes the host exit)."""
        self.dead = True
        with contextlib.suppress(OSError, ValueError), self.write_lock:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdout, self.incoming):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()


def _ask_arguments(raw: Any) -> tuple[str, list[str], list[str], dict[str, Any]]:
    if not isinstance(raw, dict) or not isinstance(raw.get("permission"), str):
        raise ToolError("context.ask() needs an object with a string permission", kind="internal")
    patterns = raw.get("patterns") or ["*"]
    always = raw.get("always") or []
    metadata = raw.get("metadata") or {}
    if not all(isinstance(p, str) for p in [*patterns, *always]):
        raise ToolError(
            "context.ask(): patterns and always must be lists of strings", kind="internal"
        )
    return raw["permission"], list(patterns), list(always), dict(metadata)


def _soon(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody is waiting
        loop.call_soon_threadsafe(fn, *args)


def _settle(future: asyncio.Future[dict[str, Any]], message: dict[str, Any]) -> None:
    if not future.done():
        future.set_result(message)


def _fail(future: asyncio.Future[dict[str, Any]], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
