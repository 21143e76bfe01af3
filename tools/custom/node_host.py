"""OpenCode's own JS/TS custom tools, run unchanged by a long-lived Bun (or Node.js) process.

OpenCode runs custom tools on Bun, so toolhost does too: a ``bun`` on PATH first, else
the one toolhost installs into its data dir from npm (the ``bun`` package ships the
binary) on first need. Node.js 20.6+ is the fallback when Bun cannot be had; there
``Bun.*`` APIs fail with a clear message. ``TOOLHOST_JS_RUNTIME=node`` (or ``bun``)
chooses one; ``TOOLHOST_BUN`` names a Bun binary to use.

``node/host.mjs`` (shipped with the package, run by either) loads the files, turns
their zod schemas into JSON Schema and runs ``execute`` on request; messages are
JSON lines on its stdin and on a pipe of its own (``TOOLHOST_PROTOCOL_FD``), with
``ctx.ask``/``ctx.metadata`` sent back to us mid-call. A tool's stdout and stderr
(``console.log``, a ``Bun.$`` that is not quiet) go to the log, never into the
protocol. The packages a tool imports come from its folder's ``node_modules``
(OpenCode installs a ``package.json`` there), else from a cache toolhost fills once
with npm.

A reader thread owns the pipe, so loading works from sync code (``reload_custom``)
and calls from any event loop. A call that does not stop within
``ABORT_GRACE_SECONDS`` of its abort gets the process killed; the next call
starts a fresh one.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import itertools
import json
import logging
import os
import shutil
import subprocess
import threading
import uuid
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict

from tools.arguments.schema import normalise_json_schema
from tools.context import ToolContext
from tools.errors import ToolError
from tools.result import ToolResult
from tools.tool import Tool, coerce_result, define
from tools.truncation import data_dir

log = logging.getLogger("toolhost.custom.node")

HOST_SCRIPT = Path(__file__).with_name("node") / "host.mjs"
MIN_NODE = (20, 6)  # module.register, which the TypeScript loader needs
MIN_BUN = (1, 1)
BUN_PACKAGE = "bun@^1.4"  # 1.4.x: what OpenCode 1.18.33 itself is built on
ABORT_GRACE_SECONDS = 2.0
START_TIMEOUT_SECONDS = 15.0
LOAD_TIMEOUT_SECONDS = 120.0
NPM_TIMEOUT_SECONDS = 300.0
# What a tool may import without having it installed, plus what the host needs.
CACHE_PACKAGES = (
    "esbuild@^0.28.0",
    "@opencode-ai/plugin@^1",
    "zod@^4",
    "zod-to-json-schema@^3.24",
)


class NodeUnavailable(Exception):
    """No runtime can run JS/TS tools here; the message says why, for ``toolhost list``."""


@dataclass(frozen=True)
class Runtime:
    """The program that runs JS/TS tools: Bun as OpenCode does, else Node.js."""

    kind: Literal["bun", "node"]
    path: str
    version: str
    why_not_bun: str = ""  # set when Node.js serves: what kept Bun away

    def describe(self) -> str:
        name = "Bun" if self.kind == "bun" else "Node.js"
        text = f"{name} {self.version} ({self.path})"
        return text + (f"; not Bun: {self.why_not_bun}" if self.why_not_bun else "")


@functools.cache
def _version_of(program: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
        return tuple(int(part) for part in out.strip().lstrip("v").split("-")[0].split(".")[:3])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _shown(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def bun_dir() -> Path:
    return data_dir() / "bun"


def _cached_bun(root: Path | None = None) -> str | None:
    """The Bun binary npm installed into ``root``, if it runs."""
    modules = (root or bun_dir()) / "node_modules"
    # The package's postinstall moves the binary to bun/bin/bun.exe; with scripts off it
    # stays in the platform package.
    candidates = [modules / "bun" / "bin" / "bun.exe", *modules.glob("@oven/bun-*/bin/bun")]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            version = _version_of(str(candidate))
            if version is not None and version >= MIN_BUN:
                return str(candidate)
    return None


def _bun_on_path() -> str | None:
    named = os.environ.get("TOOLHOST_BUN") or shutil.which("bun")
    if named is None:
        return None
    version = _version_of(named)
    return named if version is not None and version >= MIN_BUN else None


_bun_lock = threading.Lock()


def ensure_bun() -> str:
    """Install Bun from npm into toolhost's data dir once; its path, or ``NodeUnavailable``."""
    with _bun_lock:
        found = _cached_bun()
        if found is not None:
            return found
        target = bun_dir()
        _npm_install_into(target, [BUN_PACKAGE], what="Bun")
        found = _cached_bun(target)
        if found is None:
            raise NodeUnavailable(f"npm installed {BUN_PACKAGE}, but its binary does not run here")
        return found


def find_runtime(*, install: bool = True) -> Runtime:
    """Bun (on PATH, else toolhost's, installed now when ``install``), else Node.js."""
    forced = os.environ.get("TOOLHOST_JS_RUNTIME", "").strip().lower()
    if forced not in ("", "bun", "node"):
        raise NodeUnavailable(f"not loaded: TOOLHOST_JS_RUNTIME is {forced!r}; use bun or node")
    why_not = ""
    if forced != "node":
        bun = _bun_on_path() or _cached_bun()
        if bun is None and install:
            try:
                bun = ensure_bun()
            except NodeUnavailable as error:
                why_not = str(error)
        elif bun is None:
            why_not = "it is not installed yet"
        if bun is not None:
            return Runtime("bun", bun, _shown(_version_of(bun) or ()))
        if forced == "bun":
            raise NodeUnavailable(f"not loaded: TOOLHOST_JS_RUNTIME=bun, but {why_not}")
    else:
        why_not = "TOOLHOST_JS_RUNTIME=node chooses Node.js"
    try:
        node = find_node()
    except NodeUnavailable as error:
        if forced == "node":
            raise
        raise NodeUnavailable(
            "not loaded: JS/TS tools run on Bun, else Node.js 20.6+; Bun could not be had "
            f"({why_not}), and {str(error).removeprefix('not loaded: ')}"
        ) from None
    return Runtime("node", node, _shown(_version_of(node) or ()), why_not)


def find_node() -> str:
    """The ``node`` to use; ``NodeUnavailable`` when there is none (or it is too old)."""
    node = shutil.which("node")
    if node is None:
        raise NodeUnavailable("not loaded: no Node.js (20.6 or newer) was found on PATH")
    version = _version_of(node)
    if version is None:
        raise NodeUnavailable(f"not loaded: {node} --version failed")
    if version < MIN_NODE:
        shown = ".".join(map(str, version))
        raise NodeUnavailable(f"not loaded: Node.js {shown} is too old; JS/TS tools need 20.6+")
    return node


# -- the npm cache -------------------------------------------------------------------


def cache_dir() -> Path:
    return data_dir() / "node-cache"


def _package_dir(root: Path, spec: str) -> Path:
    name = spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
    return root / "node_modules" / name


def cache_ready(root: Path | None = None) -> bool:
    root = root or cache_dir()
    return all((_package_dir(root, p) / "package.json").is_file() for p in CACHE_PACKAGES)


def _resolvable(package: str, start: Path) -> bool:
    """Whether Node would find ``package`` from ``start`` (its node_modules walk)."""
    for folder in [start, *start.parents]:
        if (folder / "node_modules" / package / "package.json").is_file():
            return True
    return False


def needs_cache(files: list[Path], runtime: str = "node") -> bool:
    """Whether some file would miss a package only the cache can give it."""
    for path in files:
        transpile = path.suffix == ".ts" and runtime == "node"  # Bun runs TypeScript itself
        wanted = ["@opencode-ai/plugin", "zod"] + (["esbuild"] if transpile else [])
        if not all(_resolvable(package, path.parent) for package in wanted):
            return True
    return False


_install_lock = threading.Lock()


def ensure_cache() -> None:
    """Install ``CACHE_PACKAGES`` once; raises ``NodeUnavailable`` with npm's complaint."""
    with _install_lock:
        target = cache_dir()
        if cache_ready(target):
            return
        _npm_install_into(target, list(CACHE_PACKAGES), what="them", ready=cache_ready)


def _npm_install_into(target: Path, packages: list[str], *, what: str, ready: Any = None) -> None:
    """``npm install`` beside ``target``, then rename: a half-done install is never used."""
    npm = shutil.which("npm")
    if npm is None:
        raise NodeUnavailable(f"npm was not found on PATH to install {what}")
    staging = target.with_name(f".{target.name}-{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        (staging / "package.json").write_text(
            '{"name": "toolhost-node-cache", "private": true}\n', encoding="utf-8"
        )
        log.info("installing %s into %s", " ".join(packages), target)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0 or (ready is not None and not ready(staging)):
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise NodeUnavailable(f"npm install failed: {' '.join(tail) or done.returncode}")
        if target.exists():
            shutil.rmtree(target)  # an older, incomplete install
        staging.rename(target)
    except subprocess.TimeoutExpired:
        raise NodeUnavailable(f"npm install took longer than {NPM_TIMEOUT_SECONDS:.0f} s") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


# -- the process -----------------------------------------------------------------------


class HostFailed(Exception):
    """The Node process died or stopped answering."""


@dataclass
class _Call:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[dict[str, Any]]
    ctx: ToolContext


@dataclass
class _Channel:
    """One Node process and the requests waiting on it; its reader thread holds only this."""

    proc: subprocess.Popen[str]
    incoming: TextIO  # the host's protocol pipe (its stdout and stderr are only logged)
    hello: concurrent.futures.Future[dict[str, Any]] = field(
        default_factory=concurrent.futures.Future
    )
    loads: dict[int, concurrent.futures.Future[dict[str, Any]]] = field(default_factory=dict)
    calls: dict[int, _Call] = field(default_factory=dict)
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

    async def answer_ask(self, call: _Call, message: dict[str, Any]) -> None:
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


def _stop_quietly(channel: _Channel) -> None:
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
        self._channel: _Channel | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._retired = False
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _running(self) -> _Channel:
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

    def _start(self) -> _Channel:
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
        channel = _Channel(proc, incoming)
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
        channel.calls[call_id] = _Call(loop, future, ctx)
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

    def _kill(self, channel: _Channel) -> None:
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


# -- tools -------------------------------------------------------------------------------


class JsonArgs(BaseModel):
    """Any JSON object: a JS tool's arguments are checked by its own zod schema."""

    model_config = ConfigDict(extra="allow")


def make_tool(
    host: NodeHost, tool_id: str, path: Path, export: str, description: str, schema: dict[str, Any]
) -> Tool:
    """A ``Tool`` whose calls go to ``export`` of ``path`` in the Node host."""

    async def execute(args: JsonArgs, ctx: ToolContext) -> ToolResult:
        request = {
            "file": str(path),
            "export": export,
            "tool": tool_id,
            "args": args.model_extra or {},
            "ctx": {
                "sessionID": ctx.session_id,
                "messageID": ctx.message_id,
                "callID": ctx.call_id,
                "agent": ctx.agent,
                "directory": str(ctx.directory),
                "worktree": str(ctx.worktree),
            },
        }
        try:
            answer = await host.call(request, ctx)
        except HostFailed as error:
            raise ToolError(
                f"The {tool_id} tool could not run: {error}. Retrying may work; the host "
                "restarts on the next call.",
                kind="internal",
            ) from None
        if "error" in answer:
            raise _js_error(tool_id, answer["error"] or {})
        if answer.get("undefined"):
            raise ToolError(
                f"The {tool_id} tool returned nothing (undefined); a tool must return a string "
                'or an object with "output". This is a fault in the tool, not in your input.',
                kind="internal",
            )
        return coerce_result(answer.get("value"), tool_id)

    tool = define(tool_id, parameters=JsonArgs, execute=execute, description=description)
    return replace(tool, schema=normalise_json_schema(schema))


def _js_error(tool_id: str, info: dict[str, Any]) -> ToolError:
    kind = info.get("kind")
    message = str(info.get("message") or "")
    if kind in ("invalid_arguments", "permission_denied", "permission_rejected", "failed"):
        if info.get("bun"):
            message = f"The {tool_id} tool cannot run here. {message}"
        return ToolError(message, kind=kind)
    if info.get("stack"):
        log.warning("JS/TS tool %s threw:\n%s", tool_id, info["stack"])
    return ToolError(
        f"The {tool_id} tool failed unexpectedly ({info.get('name') or 'Error'}: {message}). "
        "This is a fault in the tool, not in your input; it has been logged. "
        "You may retry, or continue another way.",
        kind="internal",
    )


# -- toolhost doctor ---------------------------------------------------------------------

DOCTOR_CHECK = "js-runtime"


def doctor_check() -> dict[str, Any]:
    """Which runtime serves JS/TS custom tools, as a ``toolhost doctor`` check.

    Installs nothing: a Bun that would be installed on first need is reported as such.
    """
    try:
        runtime = find_runtime(install=False)
    except NodeUnavailable as error:
        return {
            "name": DOCTOR_CHECK,
            "ok": False,
            "detail": str(error).removeprefix("not loaded: "),
        }
    if runtime.kind == "bun":
        summary = f"Bun {runtime.version}"
        detail = f"Bun {runtime.version} ({runtime.path}) runs JS/TS custom tools, as in OpenCode"
    elif shutil.which("npm") is not None and os.environ.get("TOOLHOST_JS_RUNTIME") != "node":
        summary = "Bun (installed on first need)"
        detail = (
            f"Bun is installed from npm into {bun_dir()} when a JS/TS tool first loads; "
            f"until then, and if that fails, Node.js {runtime.version} ({runtime.path}) runs "
            "them, where Bun.* APIs fail"
        )
    else:
        summary = f"Node.js {runtime.version} (no Bun)"
        detail = (
            f"Node.js {runtime.version} ({runtime.path}) runs JS/TS custom tools, so Bun.* APIs "
            f"fail ({runtime.why_not_bun}); put bun on PATH to run them as OpenCode does"
        )
    return {"name": DOCTOR_CHECK, "ok": True, "detail": detail, "summary": summary}
