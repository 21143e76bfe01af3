"""Config files over the wire: every source and format, precedence, failing closed, and a
change on disk followed by ``tools/listChanged``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from server.watch import PollingWatcher
from tests.wire.conftest import (
    WireClient,
    connect,
    make_project,
    run_toolhost,
)

# The folder's own config applies only in a trusted folder (tools/permission/trust.py): these
# clients are an editor that trusts it.
TRUSTED = {"trusted": True}
ASKING = {"editor": {"permissionAsk": True}, **TRUSTED}
# How long a change on disk may take to reach the client (the watcher polls every
# 0.5 s and lets a burst settle for 0.2 s): a deadline, not a wait, so it is generous
# (3 s ran out in a full run on a machine loaded 17 deep).
CHANGE_SECONDS = 10.0


@pytest.fixture(autouse=True)
def global_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The spawned server's global config dir: $XDG_CONFIG_HOME/opencode, empty."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)
    return tmp_path / "xdg" / "opencode"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` the way editors save: a new file renamed over the old one."""
    temporary = path.with_name(path.name + ".tmp")
    write(temporary, text)
    temporary.replace(path)


def listed_changes(client: WireClient) -> list[Any]:
    """Record every tools/listChanged the server sends from now on."""
    received: list[Any] = []

    @client.feature("tools/listChanged")
    def changed(ls: WireClient, params: Any) -> None:
        received.append(params)

    return received


async def wait_until(condition: Any, seconds: float = CHANGE_SECONDS) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.05)


def bash(command: str) -> dict[str, Any]:
    return {"command": command, "description": "Runs a test command"}


async def test_every_source_and_format_with_precedence(root: Path, global_dir: Path) -> None:
    write(
        global_dir / "opencode.json",
        json.dumps(
            {
                "tools": {"todoread": False, "list": False},
                "permission": {"webfetch": "deny", "edit": "deny"},
            }
        ),
    )
    write(
        root / "opencode.jsonc",
        """{
          // JSONC: comments and trailing commas
          "tools": {"glob": false, "list": true,},  /* list: the global file said no */
          "permission": {"read": {"*.txt": "ask"},},
        }""",
    )
    write(root / ".opencode" / "opencode.json", json.dumps({"permission": {"edit": "allow"}}))
    write(
        root / ".opencode" / "tools.yaml",
        """tools:
  - name: "grep"
    type: "builtin"
    enabled: false
  - name: "bash"
    permissions:
      denied_commands: ["rm"]
""",
    )
    init = {"permission": {"read": {"notes.txt": "allow"}}}
    async with connect(root, options={**ASKING, "config": init}) as client:
        ids = await client.tool_ids()
        assert "todoread" not in ids  # global opencode.json
        assert "glob" not in ids  # project opencode.jsonc
        assert "grep" not in ids  # .opencode/tools.yaml
        assert "list" in ids  # the project file re-enables what the global one removed
        assert {"read", "bash", "write"} <= set(ids)

        fetch = await client.execute("webfetch", {"url": "https://example.invalid/"})
        assert fetch["metadata"]["error"] == "permission_denied"  # global deny, no network

        # The global deny on edit is overridden by .opencode/opencode.json's allow.
        wrote = await client.execute("write", {"filePath": "new.txt", "content": "x\n"})
        assert wrote["isError"] is False, wrote["output"]

        # initializationOptions.config comes last: notes.txt is allowed, other .txt ask.
        notes = await client.execute("read", {"filePath": "notes.txt"})
        assert "alpha" in notes["output"]
        assert client.asks == []
        client.ask_reply = {"reply": "reject"}
        other = await client.execute("read", {"filePath": "new.txt"})
        assert other["metadata"]["error"] == "permission_rejected"
        assert [ask["patterns"] for ask in client.asks] == [["new.txt"]]

        # tools.yaml's denied_commands, through a wrapper too.
        for command in ("rm notes.txt", "sudo rm -f notes.txt"):
            denied = await client.execute("bash", bash(command))
            assert denied["metadata"]["error"] == "permission_denied", command
            assert "rm" in denied["output"]
        assert (root / "notes.txt").exists()
        assert client.messages == []  # nothing to report


async def test_the_agent_filters_the_catalogue(root: Path) -> None:
    async with connect(root, options={"agent": "explore", **TRUSTED}) as client:
        explore = await client.tool_ids()  # the initialize default
        assert {"read", "grep", "glob", "bash"} <= set(explore)
        assert not {"write", "edit", "todowrite"} & set(explore)  # explore denies them
        build = await client.tool_ids(agent="build")
        assert {"write", "edit", "todowrite"} <= set(build)
    done = run_toolhost("list", "--trusted", "--agent", "explore", cwd=root)
    assert "write" not in [line.split()[0] for line in done.stdout.splitlines()]


async def test_global_tools_yaml_is_read(root: Path, global_dir: Path) -> None:
    write(global_dir / "tools.yaml", 'tools:\n  - name: "webfetch"\n    enabled: false\n')
    async with connect(root, options=TRUSTED) as client:
        assert "webfetch" not in await client.tool_ids()
        assert "read" in await client.tool_ids()


async def test_a_broken_file_fails_closed_and_a_good_files_deny_still_denies(
    root: Path, global_dir: Path
) -> None:
    write(global_dir / "opencode.json", json.dumps({"permission": {"bash": {"rm *": "deny"}}}))
    broken = write(root / "opencode.json", '{"permission": {"edit": "allow",}\n  "tools": 3\n')
    async with connect(root, options=ASKING) as client:
        # Edits ask although nothing says "ask", and commands too...
        wrote = await client.execute("write", {"filePath": "guarded.txt", "content": "x"})
        assert wrote["isError"] is False, wrote["output"]
        ran = await client.execute("bash", bash("echo hello"))
        assert "hello" in ran["output"]
        assert [ask["permission"] for ask in client.asks] == ["edit", "bash"]
        # ...while the deny from the file that parsed still denies, without asking.
        denied = await client.execute("bash", bash("rm notes.txt"))
        assert denied["metadata"]["error"] == "permission_denied"
        assert len(client.asks) == 2
        assert (root / "notes.txt").exists()
        # Every permission is at most ask, reading too.
        read = await client.execute("read", {"filePath": "notes.txt"})
        assert "alpha" in read["output"]
        assert [ask["permission"] for ask in client.asks] == ["edit", "bash", "read"]

        [shown] = client.messages  # once, however many calls
        assert shown.type == types.MessageType.Error
        assert str(broken) in shown.message and "line 2" in shown.message
        assert "asks first" in shown.message
        assert any(f"{broken}:2" in m.message for m in client.log_messages)


async def test_a_yaml_mistake_names_file_line_and_key(root: Path) -> None:
    registry = write(
        root / ".opencode" / "tools.yaml",
        'tools:\n  - name: "bash"\n    enabeld: false\n',
    )
    async with connect(root, options=ASKING) as client:
        assert "bash" in await client.tool_ids()
        [shown] = client.messages
        assert str(registry) in shown.message
        assert "line 3" in shown.message and "enabeld" in shown.message


async def test_an_invalid_init_config_keeps_its_denies(root: Path) -> None:
    init = {"permission": {"bash": {"rm *": "deny"}, "edit": "allw"}, "tools": {"grep": False}}
    async with connect(root, options={**ASKING, "config": init}) as client:
        assert "grep" not in await client.tool_ids()
        denied = await client.execute("bash", bash("rm notes.txt"))
        assert denied["metadata"]["error"] == "permission_denied"
        wrote = await client.execute("write", {"filePath": "x.txt", "content": "x"})
        assert wrote["isError"] is False
        assert [ask["permission"] for ask in client.asks] == ["edit"]
        [shown] = client.messages
        assert "initializationOptions.config" in shown.message
        assert "permission.edit" in shown.message


async def test_a_change_on_disk_sends_list_changed(root: Path) -> None:
    registry = root / ".opencode" / "tools.yaml"
    async with connect(root, options=ASKING) as client:
        changes = listed_changes(client)
        assert "grep" in await client.tool_ids()

        # A new file that disables grep (the .opencode folder did not exist).
        write(registry, 'tools:\n  - name: "grep"\n    enabled: false\n')
        await wait_until(lambda: len(changes) == 1)
        assert changes == [{}]
        assert "grep" not in await client.tool_ids()
        grep = await client.execute("grep", {"pattern": "alpha"})
        assert grep["metadata"]["error"] == "permission_denied"

        # Broken: reported once, fails closed, and what it switches off stays off.
        replace_file(registry, "tools:\n  - name: grep\n    enabled: nope\n")
        await wait_until(lambda: len(changes) == 2 and len(client.messages) == 1)
        assert str(registry) in client.messages[0].message
        assert "grep" not in await client.tool_ids()
        wrote = await client.execute("write", {"filePath": "y.txt", "content": "y"})
        assert wrote["isError"] is False
        assert [ask["permission"] for ask in client.asks] == ["edit"]

        # Removed: the defaults allow more than what was accepted (grep off), so the
        # person is asked first; once they accept, edits no longer ask.
        registry.unlink()  # held (a list change), then accepted (another)
        await wait_until(lambda: len(changes) == 4)
        assert client.asks[1]["permission"] == "config"
        assert "grep tool is switched on" in client.asks[1]["title"]
        wrote = await client.execute("write", {"filePath": "z.txt", "content": "z"})
        assert wrote["isError"] is False
        assert len(client.asks) == 2
        assert "grep" in await client.tool_ids()

        # A change that leaves the config as it was (a comment) sends nothing.
        write(root / "opencode.json", "{}")
        write(root / "opencode.json", "// nothing yet\n{}")
        await asyncio.sleep(1.2)
        assert len(changes) == 4


async def test_the_watcher_reports_one_change_per_burst(tmp_path: Path) -> None:
    config, folder = tmp_path / "a" / "opencode.json", tmp_path / "b" / "tools"
    folder.mkdir(parents=True)
    calls: list[set[str]] = []

    async def on_change(groups: set[str]) -> None:
        calls.append(groups)

    watcher = PollingWatcher({"config": [config]}, {"custom": [folder]}, on_change, interval=0.05)
    watcher.start()
    try:
        for i in range(5):  # a burst: several writes in quick succession
            write(config, "{}" + " " * i)
            await asyncio.sleep(0.02)
        await wait_until(lambda: calls)
        await asyncio.sleep(0.4)
        assert calls == [{"config"}]
        write(folder / "__pycache__" / "x.pyc", "bytecode")  # not a tool
        await asyncio.sleep(0.4)
        assert calls == [{"config"}]
        write(folder / "x.py", "")
        await wait_until(lambda: len(calls) == 2)
        assert calls[1] == {"custom"}
    finally:
        watcher.stop()


def test_toolhost_list_and_run_read_the_config_files(root: Path) -> None:
    write(root / ".opencode" / "tools.yaml", 'tools:\n  - name: "grep"\n    enabled: false\n')
    done = run_toolhost("list", "--trusted", "--json", "--cwd", str(root), cwd=root.parent)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert "grep" not in [tool["id"] for tool in listing["tools"]]
    assert listing["problems"] == []

    done = run_toolhost("run", "--trusted", "grep", '{"pattern": "alpha"}', cwd=root)
    assert done.returncode == 1
    assert "disabled" in done.stderr


def test_toolhost_list_reports_a_broken_config_file(root: Path) -> None:
    broken = write(root / "opencode.json", '{"permission": {"bash": "sometimes"}}')
    done = run_toolhost("list", "--trusted", cwd=root)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    [problem] = [line for line in lines if line.startswith("config not used:")]
    assert f"{broken}:1" in problem and "permission.bash" in problem
    assert any("asks first" in line for line in lines)

    done = run_toolhost("list", "--trusted", "--json", cwd=root)
    [problem] = json.loads(done.stdout)["problems"]
    assert problem["kind"] == "config"
    assert problem["file"] == str(broken)
    assert problem["line"] == 1
    assert problem["key"] == "permission.bash"

    # run reads the same files: a command asks (and is rejected headless).
    done = run_toolhost("run", "--trusted", "bash", json.dumps(bash("echo hi")), cwd=root)
    assert done.returncode == 1
    assert "config not used" in done.stderr
    assert "permission" in done.stderr
