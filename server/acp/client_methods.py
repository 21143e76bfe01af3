"""The ACP client methods the proxy answers for the agent itself.

``fs/write_text_file`` is toolhost's ``write`` (review, protected files, journal);
``fs/read_text_file`` is the text as the agent should see it (the editor's unsaved
buffer when attached, else the disk); ``terminal/*`` run toolhost's sandboxed
``bash``.  The proxy advertises these to the agent whatever the editor's client does,
so an agent that uses them never reaches around toolhost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.acp.relay import SessionLink
from server.acp.wire import INTERNAL_ERROR, INVALID_PARAMS, AcpError

METHODS = frozenset(
    {
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    }
)
# Long enough for a build or a test run started from an agent's terminal.
TERMINAL_TIMEOUT_MS = 60 * 60 * 1000
# OpenCode (1.18) sends fs/write_text_file only after its own edit permission was
# granted, without waiting for the answer, and then writes the file itself all the same:
# a review of it could not stop the write, so there is none (the turn's after-the-fact
# review shows OpenCode's change instead).
ECHOED_WRITE = (
    "toolhost acp does not apply this fs/write_text_file: {agent} writes the file itself "
    "after its own permission, whatever the answer; toolhost reviews the change when the "
    "turn ends."
)


def _string(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise AcpError(INVALID_PARAMS, f"{name} must be a non-empty string")
    return value


def _absolute(params: dict[str, Any]) -> Path:
    path = Path(_string(params, "path"))
    if not path.is_absolute():
        raise AcpError(INVALID_PARAMS, f"path must be absolute, got {path}")
    return path


@dataclass
class Terminal:
    """One ``terminal/create``: a bash call running in the background."""

    task: asyncio.Task[dict[str, Any]]
    limit: int | None
    output: str = ""
    exit: dict[str, Any] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def shown(self) -> tuple[str, bool]:
        """The output kept under ``outputByteLimit`` (cut at the start, on a character)."""
        data = self.output.encode()
        if self.limit is None or len(data) <= self.limit:
            return self.output, False
        return data[len(data) - self.limit :].decode(errors="ignore"), True


class ClientMethods:
    def __init__(self, *, echoed_writes_of: str | None = None) -> None:
        """``echoed_writes_of``: the agent whose ``fs/write_text_file`` only echoes a
        write it makes itself (OpenCode), declined without a review."""
        self.echoed_writes_of = echoed_writes_of
        self.terminals: dict[str, Terminal] = {}
        self._ids = itertools.count(1)

    async def handle(self, method: str, params: Any, link: SessionLink) -> Any:
        if not isinstance(params, dict):
            raise AcpError(INVALID_PARAMS, f"{method} params must be an object")
        if method == "fs/read_text_file":
            return await self.read(params, link)
        if method == "fs/write_text_file":
            if self.echoed_writes_of:
                raise AcpError(INTERNAL_ERROR, ECHOED_WRITE.format(agent=self.echoed_writes_of))
            return await self.write(params, link)
        if method == "terminal/create":
            return self.create(params, link)
        terminal = self.terminals.get(_string(params, "terminalId"))
        if terminal is None:
            raise AcpError(INVALID_PARAMS, f"no terminal {params.get('terminalId')!r}")
        if method == "terminal/output":
            output, truncated = terminal.shown()
            answer: dict[str, Any] = {"output": output, "truncated": truncated}
            if terminal.exit is not None:
                answer["exitStatus"] = terminal.exit
            return answer
        if method == "terminal/wait_for_exit":
            await terminal.done.wait()
            return terminal.exit
        if method == "terminal/kill":
            terminal.task.cancel()
            await terminal.done.wait()
            return {}
        # terminal/release
        terminal.task.cancel()
        self.terminals.pop(str(params["terminalId"]), None)
        return {}

    # -- files --------------------------------------------------------------------

    async def read(self, params: dict[str, Any], link: SessionLink) -> dict[str, Any]:
        path = _absolute(params)
        text = await link.read_text(path)
        if text is None:
            # ACP's "resource not found" (the SDKs' and Zed's words)
            raise AcpError(
                -32002, f"Resource not found: {path} (no such text file)", {"uri": str(path)}
            )
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(int(line or 1) - 1, 0)
            end = start + int(limit) if isinstance(limit, int) else None
            text = "".join(lines[start:end])
        return {"content": text}

    async def write(self, params: dict[str, Any], link: SessionLink) -> dict[str, Any]:
        path = _absolute(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise AcpError(INVALID_PARAMS, "content must be a string")
        if path.exists():  # toolhost's write wants the file read in this session first
            await link.execute("read", {"filePath": str(path), "limit": 1})
        result = await link.execute("write", {"filePath": str(path), "content": content})
        if result.get("isError") or (result.get("metadata") or {}).get("error"):
            raise AcpError(INTERNAL_ERROR, str(result.get("output") or "the write failed"))
        return {}

    # -- terminals ----------------------------------------------------------------

    def create(self, params: dict[str, Any], link: SessionLink) -> dict[str, Any]:
        command = _string(params, "command")
        args = params.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise AcpError(INVALID_PARAMS, "args must be a list of strings")
        line = shlex.join([command, *args]) if args else command
        env = params.get("env") or []
        pairs = [f"{e['name']}={e['value']}" for e in env if isinstance(e, dict) and "name" in e]
        if pairs:
            line = shlex.join(["env", *pairs]) + " " + line
        call: dict[str, Any] = {
            "command": line,
            "description": f"terminal: {line[:60]}",
            "timeout": TERMINAL_TIMEOUT_MS,
        }
        if isinstance(params.get("cwd"), str):
            call["workdir"] = params["cwd"]
        limit = params.get("outputByteLimit")
        terminal_id = f"term_{next(self._ids)}"
        holder: list[Terminal] = []

        def progress(update: Any) -> None:
            metadata = update.get("metadata") if isinstance(update, dict) else None
            if isinstance(metadata, dict) and isinstance(metadata.get("output"), str) and holder:
                holder[0].output = metadata["output"]

        task = asyncio.get_running_loop().create_task(link.execute("bash", call, progress))
        terminal = Terminal(task, limit if isinstance(limit, int) and limit >= 0 else None)
        holder.append(terminal)
        task.add_done_callback(lambda done: _finished(terminal, done))
        self.terminals[terminal_id] = terminal
        return {"terminalId": terminal_id}

    def close(self) -> None:
        for terminal in self.terminals.values():
            terminal.task.cancel()


def _finished(terminal: Terminal, task: asyncio.Task[dict[str, Any]]) -> None:
    if task.cancelled():
        terminal.exit = {"exitCode": None, "signal": "SIGKILL"}
    else:
        with contextlib.suppress(Exception):
            result = task.result()
            metadata = result.get("metadata") or {}
            terminal.output = str(metadata.get("output") or result.get("output") or "")
            code = metadata.get("exit")
            terminal.exit = {"exitCode": code if isinstance(code, int) else None, "signal": None}
        if terminal.exit is None:
            terminal.output = f"toolhost could not run the command: {task.exception()}"
            terminal.exit = {"exitCode": None, "signal": None}
    terminal.done.set()
