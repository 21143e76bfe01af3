"""toolhost's own folders are out of every tool's reach, and a lock file cannot redirect.

The runtime folder's lock files hold the token that lets a client run tools and name
the socket ``toolhost mcp`` sends it to; the trust store decides which folders' config
and tools are used.  With ``external_directory`` allowing ``/tmp/*`` (or everything),
a file tool used to read the token and rewrite the socket; each attack first works
with the defence off, then is refused without an ask.  ``toolhost mcp`` itself
checks that the socket belongs to the live sidecar the lock file names.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from server import lockfile
from server.attach import rpc
from server.lockfile import LockInfo
from server.mcp import attached
from tests.conftest import RecordingEditor
from tools.bash.sandbox import landlock, settings
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.effective import Config, SandboxSettings
from tools.host import ToolHost
from tools.permission import external
from tools.permission.rules import rules_from_config
from tools.permission.trust import store_path

TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def lock(worktree: Path) -> Path:
    info = LockInfo(token=TOKEN, transport="stdio", workspace_folders=[str(worktree)])
    path = lockfile.write(info)
    yield path
    lockfile.remove(path)


def open_host(worktree: Path, everything: bool = True, **config: Any) -> ToolHost:
    rules = {"*": "allow"} if everything else {"external_directory": {"/tmp/*": "allow"}}
    return ToolHost(
        worktree,
        tools=[*builtin_tools(), bash_module.tool],
        config=Config(rules=rules_from_config(rules), **config),
        read_before_write=False,
    )


def defence_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """No folder of toolhost's counts as its own: only the rules decide, as before."""
    monkeypatch.setattr(external, "secret_folder", lambda *paths, **places: None)
    monkeypatch.setattr(external, "secret_dirs", lambda **_: [])


def tool_calls(path: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    folder = str(path.parent.parent)  # the runtime folder's parent: a search covering it
    return {
        "read": ("read", {"filePath": str(path)}),
        "edit": ("edit", {"filePath": str(path), "oldString": TOKEN, "newString": "x"}),
        "write": ("write", {"filePath": str(path), "content": "{}"}),
        "grep": ("grep", {"pattern": TOKEN, "path": folder}),
        "glob": ("glob", {"pattern": "**/sidecar-*", "path": folder}),
        "list": ("list", {"path": folder}),
    }


def reached(tool: str, result: Any, path: Path) -> bool:
    """Did the call read or change the lock file?"""
    if tool in ("edit", "write"):
        return TOKEN not in path.read_text()
    if tool in ("glob", "list"):
        return not result.is_error and path.name in result.output
    return TOKEN in result.output


@pytest.mark.parametrize("everything", [True, False], ids=["allow", "tmp-glob"])
@pytest.mark.parametrize("tool", list(tool_calls(Path("/x/y/z"))))
async def test_the_lock_file_is_reached_without_the_defence(
    worktree: Path, lock: Path, tool: str, everything: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not everything and not str(lock).startswith("/tmp/"):
        pytest.skip("the runtime folder is not under /tmp here")
    defence_off(monkeypatch)
    name, args = tool_calls(lock)[tool]
    result = await open_host(worktree, everything).execute(name, args, editor=RecordingEditor())
    assert not result.is_error, result.output
    assert reached(tool, result, lock)  # the attack works


@pytest.mark.parametrize("everything", [True, False], ids=["allow", "tmp-glob"])
@pytest.mark.parametrize("tool", list(tool_calls(Path("/x/y/z"))))
async def test_the_lock_file_is_out_of_reach_of_every_tool(
    worktree: Path, lock: Path, tool: str, everything: bool
) -> None:
    editor = RecordingEditor("once")
    name, args = tool_calls(lock)[tool]
    result = await open_host(worktree, everything).execute(name, args, editor=editor)
    assert not reached(tool, result, lock), result.output
    assert not any("toolhost" in str(a.patterns) for a in editor.asks)  # refused, not asked
    if tool in ("read", "edit", "write"):
        assert result.is_error and "toolhost's own folder" in result.output


async def test_the_trust_store_is_refused_to_the_file_tools(worktree: Path) -> None:
    store = store_path()
    store.parent.mkdir(parents=True, exist_ok=True)
    before = store.read_text() if store.exists() else None
    result = await open_host(worktree).execute(
        "write", {"filePath": str(store), "content": json.dumps({"trusted": ["/"]})}
    )
    assert result.is_error and "toolhost's own folder" in result.output
    assert (store.read_text() if store.exists() else None) == before


@pytest.mark.skipif(landlock.abi_version() < landlock.MIN_ABI, reason="no Landlock ABI 3+")
async def test_bash_cannot_read_the_lock_file_or_the_trust_store(
    worktree: Path, lock: Path
) -> None:
    store = store_path()
    store.parent.mkdir(parents=True, exist_ok=True)
    kept = store.read_bytes() if store.exists() else None
    store.write_text('{"note": "s3cret-trust"}')
    line = f'cat "$(printf %s {lock.parent})/{lock.name}" "$(printf %s {store.parent})/trust.json"'
    off = open_host(worktree, sandbox=SandboxSettings(mode="off"))
    args = {"command": line, "description": "reads", "timeout": 20_000}
    shown = (await off.execute("bash", args, editor=RecordingEditor())).output
    assert TOKEN in shown and "s3cret-trust" in shown  # the attack works unsandboxed
    result = await open_host(worktree).execute("bash", args, editor=RecordingEditor())
    assert TOKEN not in result.output and "s3cret-trust" not in result.output
    if kept is None:
        store.unlink()
    else:
        store.write_bytes(kept)


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_an_acp_relays_lock_file_is_out_of_reach(
    worktree: Path, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``toolhost acp`` keeps its relay's lock file in a private runtime folder in /tmp."""
    if defence == "off":
        defence_off(monkeypatch)
    relay = Path(tempfile.mkdtemp(prefix="toolhost-acp-"))
    try:
        (relay / "toolhost").mkdir()
        lock = relay / "toolhost" / "sidecar-1.json"
        lock.write_text(json.dumps({"token": TOKEN}))
        host = open_host(worktree)
        result = await host.execute("read", {"filePath": str(lock)})
        assert (TOKEN in result.output) is (defence == "off"), result.output
        # A search of the temp folder, and one inside the relay's folder, skip it too.
        for folder in (relay.parent, relay):
            args = {"pattern": TOKEN, "path": str(folder), "include": "sidecar-*.json"}
            result = await host.execute("grep", args)
            assert (TOKEN in result.output) is (defence == "off"), (folder, result.output)
    finally:
        shutil.rmtree(relay)


# ------------------------------------------------------------- toolhost mcp's socket


class Listener:
    """A listener the agent runs: records every byte a client sends it."""

    def __init__(self) -> None:
        self.heard = bytearray()
        self.server: asyncio.AbstractServer | None = None

    async def start(self, path: Path) -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with_timeout = asyncio.wait_for(reader.read(4096), 5)
            self.heard += await with_timeout
            writer.close()

        self.server = await asyncio.start_unix_server(serve, path=str(path))


async def try_attach(info: LockInfo) -> Any:
    return await attached.attach(
        info,
        session_id="ses_mcp_test",
        agent="build",
        model=None,
        fallback=lambda: None,  # type: ignore[arg-type,return-value]
    )


def checks_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rpc, "_check_socket_file", lambda path: None)
    monkeypatch.setattr(rpc, "_check_peer", lambda connection, path, pid: None)


@pytest.mark.parametrize("defence", ["off", "on"])
async def test_mcp_never_sends_the_token_to_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, defence: str
) -> None:
    """The lock file names a live sidecar (pid of a process of ours) but a socket the
    agent listens on: the token must not reach it."""
    if defence == "off":
        checks_off(monkeypatch)
    listener, path = Listener(), tmp_path / "fake.sock"
    await listener.start(path)
    sidecar = subprocess.Popen(["sleep", "30"])
    try:
        info = LockInfo(token=TOKEN, transport="stdio", socket=str(path), pid=sidecar.pid)
        with caplog.at_level(logging.WARNING, "toolhost.mcp"):
            assert await try_attach(info) is None  # falls back to serving alone
    finally:
        sidecar.kill()
        sidecar.wait()
        assert listener.server is not None
        listener.server.close()
    if defence == "off":
        assert TOKEN.encode() in listener.heard  # the attack works: the token was sent
    else:
        assert TOKEN.encode() not in listener.heard
        assert f"not by the sidecar its lock file names (pid {sidecar.pid}" in caplog.text


async def test_mcp_refuses_a_socket_file_of_another_user(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the socket to another user")
    listener, path = Listener(), tmp_path / "fake.sock"
    await listener.start(path)
    os.chown(path, 65534, 65534)
    info = LockInfo(token=TOKEN, transport="stdio", socket=str(path), pid=os.getpid())
    try:
        with caplog.at_level(logging.WARNING, "toolhost.mcp"):
            assert await try_attach(info) is None
    finally:
        assert listener.server is not None
        listener.server.close()
    assert not listener.heard
    assert "is not a socket of this user" in caplog.text


@pytest.mark.skipif(landlock.abi_version() < landlock.MIN_ABI, reason="no Landlock ABI 3+")
@pytest.mark.parametrize("defence", ["off", "on"])
async def test_a_relay_started_between_two_commands_is_hidden_from_the_second(
    worktree: Path, tmp_path: Path, defence: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relays' folders are found by listing the temp folder, and a listing is kept
    while that folder is unchanged (``tools.config.dirs.matches_now``): a relay made
    after one bash call must still be hidden from the next."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where gettempdir() says relays go
    if defence == "off":
        monkeypatch.setattr(settings, "secret_dirs", lambda **_: [])
    time.sleep(0.15)  # the folder's ctime is now a clock tick old: its listing is kept
    host = open_host(worktree)
    first = await host.execute("bash", {"command": "true", "description": "nothing"})
    assert first.metadata["exit"] == 0, first.output
    relay = temp / "toolhost-acp-started-since"
    (relay / "toolhost").mkdir(parents=True)
    # Its own token: a search of /tmp by another test must not find this one.
    token = "feedfacefeedfacefeedfacefeedface"
    (relay / "toolhost" / "sidecar-1.json").write_text(json.dumps({"token": token}))
    try:
        line = f'cat "$(printf %s {relay})/toolhost/sidecar-1.json"'
        args = {"command": line, "description": "reads", "timeout": 20_000}
        result = await host.execute("bash", args, editor=RecordingEditor())
        assert (token in result.output) is (defence == "off"), result.output
    finally:
        shutil.rmtree(relay)
