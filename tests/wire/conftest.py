"""Wire tests: the installed ``toolhost serve`` over stdio, driven by pytest-lsp's client.

``connect`` starts one server for a worktree and initialises it; ``WireClient``
answers the server's requests (``permission/ask``, ``window/showMessageRequest``)
the way a test scripts them and records what it was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import cattrs
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

TOOLHOST = Path(sys.executable).with_name("toolhost")

# A client that can show a window/showMessageRequest, and one that cannot.
PROMPTING = types.ClientCapabilities(
    window=types.WindowClientCapabilities(show_message=types.ShowMessageRequestClientCapabilities())
)
PLAIN = types.ClientCapabilities()


def plain_converter() -> cattrs.Converter:
    """pygls's converter, but custom params and results stay dicts (not namedtuples)."""
    converter = default_converter()
    converter.register_structure_hook(
        JsonRPCRequestMessage,
        lambda o, cls: cls(
            id=o["id"], method=o["method"], jsonrpc=o["jsonrpc"], params=o.get("params")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda o, cls: cls(method=o["method"], jsonrpc=o["jsonrpc"], params=o.get("params")),
    )
    converter.register_structure_hook(
        JsonRPCResponseMessage,
        lambda o, cls: cls(id=o["id"], jsonrpc=o["jsonrpc"], result=o.get("result")),
    )
    return converter


class WireClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__(converter_factory=plain_converter)
        register_lsp_features(self)
        self.asks: list[dict[str, Any]] = []
        # None: never answer; a future: answer with its result once it has one
        self.ask_reply: dict[str, Any] | asyncio.Future[dict[str, Any]] | None = {"reply": "once"}
        self.asked = asyncio.Event()
        self.prompts: list[types.ShowMessageRequestParams] = []
        self.prompt_choice: str | None = "Allow once"  # None: dismiss the prompt
        self.updates: list[dict[str, Any]] = []

        @self.feature("permission/ask")
        async def permission_ask(ls: WireClient, params: dict[str, Any]) -> dict[str, Any]:
            ls.asks.append(params)
            ls.asked.set()
            if ls.ask_reply is None:
                await asyncio.Event().wait()  # never answers; only a cancel ends this
            if isinstance(ls.ask_reply, asyncio.Future):  # answered when the test says
                return await ls.ask_reply
            return ls.ask_reply  # type: ignore[return-value]

        @self.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def prompt(
            ls: WireClient, params: types.ShowMessageRequestParams
        ) -> types.MessageActionItem | None:
            ls.prompts.append(params)
            return types.MessageActionItem(ls.prompt_choice) if ls.prompt_choice else None

        @self.feature("tools/update")
        def update(ls: WireClient, params: dict[str, Any]) -> None:
            ls.updates.append(params)

    async def call(self, method: str, params: Any = None) -> Any:
        return await self.protocol.send_request_async(method, params)

    async def execute(self, tool: str, args: Any, **extra: Any) -> dict[str, Any]:
        return await self.call("tools/execute", {"tool": tool, "args": args, **extra})

    async def tool_ids(self, **params: Any) -> list[str]:
        result = await self.call("tools/list", params)
        return [tool["id"] for tool in result["tools"]]

    async def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        """didOpen, then a round trip: the server has seen the open when this returns."""
        uri = path.as_uri()
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(
                    uri, "plaintext", version, path.read_text() if text is None else text
                )
            )
        )
        await self.call("tools/list", {})
        return uri


Client = TypeVar("Client", bound=WireClient)


def server_env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "TOOLHOST_DATA_DIR": str(data_dir)}


@contextlib.asynccontextmanager
async def connect(
    root: Path,
    *,
    options: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities = PLAIN,
    data_dir: Path | None = None,
) -> AsyncIterator[WireClient]:
    """A ``toolhost serve`` on ``root``, initialised; shut down and exited afterwards."""
    async with serve_to(
        WireClient(), root, options=options, capabilities=capabilities, data_dir=data_dir
    ) as client:
        yield client


@contextlib.asynccontextmanager
async def serve_to(
    client: Client,
    root: Path,
    *,
    options: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities = PLAIN,
    data_dir: Path | None = None,
) -> AsyncIterator[Client]:
    """``client`` started on a ``toolhost serve`` on ``root`` and initialised; then shut
    down and exited."""
    env = server_env(data_dir or root.parent / "toolhost-data")
    await client.start_io(str(TOOLHOST), "serve", env=env, cwd=str(root))
    try:
        uri = root.as_uri()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri, root.name)],
                initialization_options=options,
            )
        )
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


@contextlib.asynccontextmanager
async def listening(
    transport: str, root: Path, data_dir: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """``toolhost serve --tcp|--ws`` on a free loopback port: the process and its port.

    Stopped afterwards if it has not ended by itself.
    """
    proc = await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "serve",
        transport,
        "127.0.0.1:0",
        stderr=asyncio.subprocess.PIPE,
        cwd=root,
        env=server_env(data_dir),
    )
    try:
        assert proc.stderr is not None
        found = None
        while found is None:
            line = await asyncio.wait_for(proc.stderr.readline(), 20)
            assert line, "the server ended before listening"
            found = re.search(rb"listening on 127\.0\.0\.1:(\d+)", line)
        yield proc, int(found.group(1))
    finally:
        await stop(proc)


def attach_token(pid: int) -> str:
    """The token in the lock file of the sidecar with this pid (server/lockfile.py)."""
    from server import lockfile

    (info,) = [i for i in lockfile.discover() if i.pid == pid]
    return info.token


async def stop(proc: asyncio.subprocess.Process, seconds: float = 10) -> None:
    """End a server the test is done with the way an editor would: end of input (or
    SIGTERM without a stdin pipe), so it exits on its own and coverage, when measuring,
    keeps its data; killed only if it does not end in ``seconds``."""
    if proc.returncode is not None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    else:
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), seconds)
    except TimeoutError:
        proc.kill()
        await proc.wait()


class Framed:
    """Raw LSP-framed JSON-RPC over a pair of streams: a server's pipes or a TCP socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def tcp(cls, port: int) -> Framed:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, **fields: Any) -> None:
        body = json.dumps({"jsonrpc": "2.0", **fields}).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    async def next_message(self, timeout: float = 20) -> dict[str, Any]:
        header = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        length = int(header.split(b":")[1])
        return json.loads(await self.reader.readexactly(length))

    async def answer_to(self, msg_id: Any, timeout: float = 20) -> dict[str, Any]:
        """The response to ``msg_id``; what comes before it (log messages) is skipped."""
        while (message := await self.next_message(timeout)).get("id") != msg_id or (
            "method" in message
        ):
            pass
        return message

    async def request_from_server(self, method: str, timeout: float = 20) -> dict[str, Any]:
        """The server's next request (or notification) named ``method``."""
        while (message := await self.next_message(timeout)).get("method") != method:
            pass
        return message

    async def initialize(
        self,
        root: Path,
        options: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> None:
        params = {
            "capabilities": capabilities or {},
            "rootUri": root.as_uri(),
            "initializationOptions": options,
        }
        self.send(id="init", method="initialize", params=params)
        assert "result" in await self.answer_to("init")
        self.send(method="initialized", params={})

    def close(self) -> None:
        self.writer.close()


async def spawn_stdio(root: Path, data_dir: Path, *args: str) -> asyncio.subprocess.Process:
    """``toolhost serve [args]`` on stdio with pipes to speak raw bytes to it (stderr
    dropped)."""
    return await asyncio.create_subprocess_exec(
        str(TOOLHOST),
        "serve",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=root,
        env=server_env(data_dir),
    )


@contextlib.asynccontextmanager
async def raw_session(
    root: Path,
    data_dir: Path,
    *args: str,
    options: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Framed]]:
    """``toolhost serve [args]`` over stdio, initialised through a ``Framed`` client;
    stopped afterwards if it is still up."""
    proc = await spawn_stdio(root, data_dir, *args)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        client = Framed(proc.stdout, proc.stdin)
        await client.initialize(root, options, capabilities)
        yield proc, client
    finally:
        await stop(proc)


def run_toolhost(
    *args: str, cwd: Path, data_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The ``toolhost`` command line, run to its end (its data dir beside ``cwd``)."""
    return subprocess.run(
        [str(TOOLHOST), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(data_dir or cwd.parent / "data"),
    )


def make_project(base: Path) -> Path:
    """A small worktree every module can read from."""
    root = base / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "src" / "pkg" / "core.py").write_text("def answer():\n    return 42\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'TODO'\n")
    (root / ".env").write_text("TOKEN=secret\n")
    return root
