"""``toolhost acp``: an ACP agent that runs another ACP agent and stands between it
and the editor's ACP client.

Every message is relayed unchanged except:

- ``initialize``: the agent is told the client can read and write files and run
  terminals (the proxy answers those itself, ``server.acp.client_methods``);
- ``session/new`` / ``session/load``: toolhost's MCP server joins ``mcpServers`` (the
  client's own entries kept, one of its own named ``toolhost`` replaced), and the
  agent's own tools are turned off where it reads that from the session
  (``server.acp.agents``);
- ``session/prompt``: a turn (``server.acp.turns``), its answer relayed once the turn's
  changes made outside toolhost were reviewed;
- the agent's ``fs/*`` and ``terminal/*`` requests, answered here;
- standalone, the proxy's sidecar's reviews, sent to the client as
  ``session/request_permission`` (``server.acp.reviews``).

An agent that exits fails every request still waiting for it, with its status and
the end of its stderr, and then the proxy exits; one that does not answer
``initialize``, ``session/new`` or ``session/load`` in time has that request failed.
When the proxy ends (its client closed, SIGTERM, SIGHUP, or killed), the agent's whole
process group ends with it (``server.acp.reaper``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from server.acp import reviews, turns
from server.acp.agents import Agent
from server.acp.client_methods import METHODS, ClientMethods
from server.acp.reaper import Reaper, end_group
from server.acp.relay import SessionLink
from server.acp.startlock import StartLock
from server.acp.upstream import OwnSidecar
from server.acp.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LINE_LIMIT,
    AcpError,
    LinePeer,
    Message,
    is_notification,
    is_request,
    stdio_streams,
)
from server.attach.rpc import REQUEST_CANCELLED, RpcError
from server.lockfile import LockInfo
from tools.bash.sandbox.syscalls import PR_SET_PDEATHSIG, prctl

log = logging.getLogger("toolhost.acp")

SESSION_METHODS = ("session/new", "session/load", "session/resume", "session/fork")
TIMED_METHODS = ("initialize", "session/new", "session/load")
STDERR_TAIL = 4000


class Proxy:
    def __init__(
        self,
        agent: Agent,
        *,
        review: bool,
        attach: bool,
        start_timeout: float,
        model: str | None = None,
    ) -> None:
        self.agent = agent
        self.model = model
        self.review = review
        self.attach = attach
        self.start_timeout = start_timeout
        self.client: LinePeer | None = None
        self.child: LinePeer | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.reaper: Reaper | None = None
        self.stderr_tail = b""
        self.pending: dict[Any, str] = {}  # client request id -> method, until answered
        self.links: dict[str, SessionLink] = {}  # ACP session id -> its link
        self.by_toolhost: dict[str, SessionLink] = {}  # toolhost session id -> link
        self.awaiting: dict[Any, SessionLink] = {}  # a session request's id -> its link
        self.prompts: dict[Any, tuple[SessionLink, asyncio.Task[str | None]]] = {}
        self.sidecars: dict[Path, asyncio.Task[OwnSidecar]] = {}
        echoes = "OpenCode" if agent.kind == "opencode" else None
        self.methods = ClientMethods(echoed_writes_of=echoes)
        self.queue: asyncio.Queue[Message] = asyncio.Queue()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.landed_ids = itertools.count(1)
        self.start_lock = StartLock(agent.argv, {**os.environ, **agent.env})

    # -- running -----------------------------------------------------------------

    async def run(self) -> int:
        reader, writer = await stdio_streams()
        self.client = LinePeer("ACP client", reader, writer, self.queue.put_nowait)
        await self.start_lock.acquire(self.start_timeout)  # until it answers initialize
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.agent.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **self.agent.env},
                limit=LINE_LIMIT,
                start_new_session=True,  # its own process group, ended whole (server.acp.reaper)
                preexec_fn=functools.partial(_end_with, os.getpid()),
            )
        except OSError as error:
            print(f"toolhost acp: cannot start {self.agent.argv[0]}: {error}", file=sys.stderr)
            return 127
        self.reaper = Reaper(self.process.pid)
        assert self.process.stdout and self.process.stdin
        self.child = LinePeer("agent", self.process.stdout, self.process.stdin, self._from_child)
        relay = asyncio.create_task(self._client_loop())
        child_done = asyncio.create_task(self._child_lifetime())
        client_done = asyncio.create_task(self.client.run())
        stderr = asyncio.create_task(self._copy_stderr())
        stopped = asyncio.create_task(_terminated())
        finished, _ = await asyncio.wait(
            {child_done, client_done, stopped}, return_when=asyncio.FIRST_COMPLETED
        )
        status = 0
        if child_done in finished:
            status = 1 if self.pending else 0
        relay.cancel()
        await self._shutdown()
        for task in (child_done, client_done, stderr, stopped):
            task.cancel()
        return status

    async def _child_lifetime(self) -> None:
        assert self.child is not None and self.process is not None
        await self.child.run()
        code = await self.process.wait()
        self.start_lock.release()
        tail = self.stderr_tail.decode(errors="replace").strip()
        words = f"The agent ({' '.join(self.agent.argv)}) exited with status {code}"
        message = f"{words}: {tail[-1500:]}" if tail else f"{words}."
        for msg_id, method in list(self.pending.items()):
            self._fail_client(msg_id, AcpError(INTERNAL_ERROR, f"{message} ({method} unanswered)"))
        if self.pending or code:
            print(f"toolhost acp: {message}", file=sys.stderr)

    async def _copy_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
            with contextlib.suppress(OSError):
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()

    async def _shutdown(self) -> None:
        self.start_lock.release()
        self.methods.close()
        if self.process is not None:
            if self.process.returncode is None:
                with contextlib.suppress(OSError, RuntimeError):
                    assert self.process.stdin is not None
                    self.process.stdin.close()
                with contextlib.suppress(TimeoutError):  # a clean end of its own first
                    await asyncio.wait_for(self.process.wait(), 3)
            # Then the whole group: what a launcher started stays when the launcher ends.
            await asyncio.to_thread(end_group, self.process.pid)
            await self.process.wait()
        if self.reaper is not None:
            await asyncio.to_thread(self.reaper.release)
        for link in self.by_toolhost.values():
            await link.close()
        for started in self.sidecars.values():
            if started.done() and not started.exception():
                await started.result().close()
        for path in self.agent.cleanup:  # files first, then their folders
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- the client's messages, in order -------------------------------------------

    async def _client_loop(self) -> None:
        while True:
            message = await self.queue.get()
            try:
                await self._from_client(message)
            except Exception:
                log.exception("relaying %s failed", message.get("method"))
                if is_request(message):
                    self._fail_client(
                        message["id"], AcpError(INTERNAL_ERROR, "toolhost acp failed")
                    )

    async def _from_client(self, message: Message) -> None:
        assert self.child is not None
        changed = is_request(message) and message["method"] in ("initialize", *SESSION_METHODS)
        if is_request(message):
            method = message["method"]
            params = message.get("params")
            if isinstance(params, dict):
                if method == "initialize":
                    _advertise_client_methods(params)
                elif method in SESSION_METHODS:
                    await self._session_opening(message["id"], method, params)
                elif method == "session/prompt":
                    await self._prompt_starting(message["id"], params)
            self.pending[message["id"]] = method
            if method in TIMED_METHODS:
                self._spawn(self._deadline(message["id"], method))
        self.child.send(message, relayed=not changed)

    async def _session_opening(self, msg_id: Any, method: str, params: dict[str, Any]) -> None:
        cwd = params.get("cwd")
        folder = Path(cwd) if isinstance(cwd, str) and os.path.isabs(cwd) else Path.cwd()
        link = await self._link(folder)
        servers = params.get("mcpServers")
        kept = [
            s for s in servers or [] if not (isinstance(s, dict) and s.get("name") == "toolhost")
        ]
        params["mcpServers"] = [*kept, link.mcp_server()]
        self.agent.session_meta(params)
        known = params.get("sessionId")
        if method in ("session/load", "session/resume") and isinstance(known, str):
            self._bind(link, known)
        self.awaiting[msg_id] = link

    async def _link(self, folder: Path) -> SessionLink:
        editor = self._editor_for(folder)
        if editor is not None:
            lock = editor

            async def upstream() -> LockInfo:
                return lock

            link = SessionLink(folder, upstream, lock.editor, model=self.model)
            link.observe = lambda tool, args, result: self._landed(link, tool, result)
        else:
            sidecar = self._sidecar(folder)

            async def upstream() -> LockInfo:
                started = await asyncio.shield(sidecar)
                assert started.lock is not None
                return started.lock

            link = SessionLink(folder, upstream, "toolhost acp", model=self.model)
        link.review = self._ask
        await link.start()
        self.by_toolhost[link.toolhost_session] = link
        return link

    def _editor_for(self, folder: Path) -> LockInfo | None:
        if not self.attach:
            return None
        from server.mcp.editors import choose_editor

        return choose_editor(folder)

    def _sidecar(self, folder: Path) -> asyncio.Task[OwnSidecar]:
        if folder not in self.sidecars:

            async def start() -> OwnSidecar:
                sidecar = OwnSidecar(folder, self._ask, review=self.review)
                await sidecar.start()
                return sidecar

            self.sidecars[folder] = asyncio.get_running_loop().create_task(start())
        return self.sidecars[folder]

    def _bind(self, link: SessionLink, acp_session: str) -> None:
        if not link.acp_session.done():
            link.acp_session.set_result(acp_session)
        self.links[acp_session] = link

    async def _prompt_starting(self, msg_id: Any, params: dict[str, Any]) -> None:
        """Begin the prompt's turn; relayed once its first scan is done (or after
        ``turns.BEGIN_SECONDS``: a slow scan delays no prompt longer)."""
        link = self.links.get(str(params.get("sessionId")))
        if link is None:
            return
        turn = asyncio.get_running_loop().create_task(
            turns.begin(link, turns.title_of(params.get("prompt")))
        )
        self.prompts[msg_id] = (link, turn)
        done, _ = await asyncio.wait({turn}, timeout=turns.BEGIN_SECONDS)
        if not done:
            log.warning(
                "the turn's first scan took over %g s; the prompt goes on", turns.BEGIN_SECONDS
            )

    async def _deadline(self, msg_id: Any, method: str) -> None:
        await asyncio.sleep(self.start_timeout)
        if msg_id in self.pending:
            self._fail_client(
                msg_id,
                AcpError(
                    INTERNAL_ERROR,
                    f"The agent ({self.agent.argv[0]}) did not answer {method} within "
                    f"{self.start_timeout:g} s; check that it starts (its log is on stderr).",
                ),
            )

    def _fail_client(self, msg_id: Any, error: AcpError) -> None:
        method = self.pending.pop(msg_id, None)
        assert self.client is not None
        self.client.fail(msg_id, error, method)

    # -- the agent's messages ---------------------------------------------------------

    def _from_child(self, message: Message) -> None:
        assert self.client is not None
        if is_request(message) and message["method"] in METHODS:
            self._spawn(self._serve(message))
            return
        if not is_request(message) and not is_notification(message):
            msg_id = message.get("id")
            if msg_id not in self.pending:
                return  # a request we already failed ourselves (a deadline)
            method = self.pending.pop(msg_id)
            self._answered(msg_id, message, method)
            return
        self.client.send(message, relayed=True)

    def _answered(self, msg_id: Any, message: Message, method: str) -> None:
        """Relay the agent's answer; a prompt's once its turn has ended and the changes
        made outside toolhost were reviewed (the client's review belongs to the prompt)."""
        assert self.client is not None
        client = self.client
        if method == "initialize":
            self.start_lock.release()  # it has set itself up: the next start may go
        result = message.get("result")
        link = self.awaiting.pop(msg_id, None)
        if link is not None and isinstance(result, dict):
            session = result.get("sessionId")
            if isinstance(session, str):
                self._bind(link, session)
        prompt = self.prompts.pop(msg_id, None)
        if prompt is None:
            client.send(message, method, relayed=True)
            return
        stop = result.get("stopReason") if isinstance(result, dict) else "error"

        async def finish() -> None:
            try:
                await turns.end(prompt[0], await prompt[1], stop)
            finally:
                client.send(message, method, relayed=True)

        self._spawn(finish())

    async def _serve(self, message: Message) -> None:
        assert self.child is not None
        params = message.get("params")
        session = params.get("sessionId") if isinstance(params, dict) else None
        link = self.links.get(str(session))
        try:
            if link is None:
                raise AcpError(INVALID_PARAMS, f"unknown sessionId {session!r}")
            result = await self.methods.handle(message["method"], params, link)
        except AcpError as error:
            self.child.fail(message["id"], error, message["method"])
        except Exception as error:
            log.exception("%s failed", message["method"])
            failure = AcpError(INTERNAL_ERROR, f"toolhost: {error}")
            self.child.fail(message["id"], failure, message["method"])
        else:
            self.child.answer(message["id"], result, message["method"])

    # -- reviews ---------------------------------------------------------------------

    async def _ask(self, ask: dict[str, Any]) -> dict[str, Any]:
        """A review of the sidecar (the proxy's own, or a turn's after-the-fact review),
        asked of the ACP client. An after-the-fact review nobody answered is an error
        answer: it leaves the files as they are, listed (``reviews.after_the_fact_reply``)."""
        assert self.client is not None
        after = reviews.is_after_the_fact(ask)
        link = self.by_toolhost.get(str(ask.get("sessionID")))
        if link is None and self.by_toolhost:
            link = list(self.by_toolhost.values())[-1]  # a sub-agent's child session
        if link is None:
            return _unanswered(after, "No ACP session is open to ask in.")
        acp_session = await link.acp_session
        try:
            answer = await self.client.request(
                "session/request_permission", reviews.request(acp_session, ask)
            )
        except AcpError as error:
            return _unanswered(after, f"The editor could not ask: {error.message}")
        if not after:
            return reviews.reply(answer)
        chosen = reviews.after_the_fact_reply(answer)
        return chosen if chosen is not None else _unanswered(after, "The review was dismissed.")

    def _landed(self, link: SessionLink, tool: str, result: dict[str, Any]) -> None:
        """Attached: what a call changed, shown to the ACP client once it landed."""
        if not link.acp_session.done() or self.client is None:
            return
        call_id = f"{tool}-{next(self.landed_ids)}"
        update = reviews.landed_update(link.acp_session.result(), call_id, tool, result)
        if update is not None:
            self.client.notify("session/update", update)


def _unanswered(after_the_fact: bool, why: str) -> dict[str, Any]:
    if after_the_fact:
        raise RpcError(REQUEST_CANCELLED, f"{why} The changes stay, listed for undo.")
    return {"reply": "reject", "message": why}


def _advertise_client_methods(params: dict[str, Any]) -> None:
    capabilities = params.get("clientCapabilities")
    if not isinstance(capabilities, dict):
        capabilities = params["clientCapabilities"] = {}
    found = capabilities.get("fs")
    fs: dict[str, Any] = found if isinstance(found, dict) else {}
    capabilities["fs"] = {**fs, "readTextFile": True, "writeTextFile": True}
    capabilities["terminal"] = True


async def _terminated() -> None:
    """Until the proxy gets SIGTERM or SIGHUP: it then ends as when its client closes."""
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, ended.set)
    try:
        await ended.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)


def _end_with(proxy: int) -> None:
    """In the agent's process, before its exec: SIGTERM when the proxy ends, however it
    ends. A proxy killed by its client left codex-acp (and the MCP servers it had
    started) running for good."""
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != proxy:  # the proxy ended before the line above
        os._exit(1)
