"""The kernel sandbox around every bash command (issue 11), against the real kernel.

Every attack is first run with the defence off (``sandbox.mode: off``), to prove it
works (the marker outside the project is overwritten, the loopback server hears
from it), then with the defence on, where the kernel stops it and the marker is
intact. Missing mechanisms are simulated with ``TOOLHOST_SANDBOX_SIMULATE``, the
probe's documented switch: the kernel calls themselves are never mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor
from tools.bash.sandbox import client, landlock, probe
from tools.bash.sandbox import plan as plan_module
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.effective import Config, SandboxSettings
from tools.host import ToolHost
from tools.permission.asks import PermissionReply, PermissionRequest
from tools.permission.rules import rules_from_config
from tools.result import ToolResult

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)

OFF = SandboxSettings(mode="off")


class Editor(RecordingEditor):
    """Approves every ask but "allow writing to … for this command?", answered ``rerun``."""

    def __init__(self, rerun: str = "reject") -> None:
        super().__init__("once")
        self.rerun = rerun

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        self.asks.append(request)
        if request.metadata.get("rerun"):
            return PermissionReply(self.rerun)  # type: ignore[arg-type]
        return PermissionReply("once")


def make_host(worktree: Path, sandbox: SandboxSettings | None = None, **config: Any) -> ToolHost:
    settings = Config(sandbox=sandbox or SandboxSettings(), **config)
    return ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=settings)


async def bash(host: ToolHost, command: str, editor: RecordingEditor | None = None) -> ToolResult:
    return await host.execute(
        "bash",
        {"command": command, "description": "Tries something", "timeout": 20_000},
        editor=editor or Editor(),
        session_id="ses_sandbox",
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


@pytest.fixture
def marker(outside: Path) -> Path:
    path = outside / "marker"
    path.write_text("keep me\n")
    return path


@pytest.fixture
def simulate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``simulate("no-userns")``: the supervisor started from here on lacks it."""

    def switch(value: str) -> None:
        monkeypatch.setenv(probe.SIMULATE_VAR, value)

    yield switch
    monkeypatch.delenv(probe.SIMULATE_VAR, raising=False)


def hidden(path: Path) -> str:
    """The path, spelled so that no parser can see it (only the kernel can stop it)."""
    return f'"$(printf %s {path.parent})/{path.name}"'


# ---------------------------------------------------------------- writes outside

NODE = shutil.which("node")
PERL = shutil.which("perl")
GIT = shutil.which("git")

WRITERS = {
    "bash": "echo pwned > {m}",
    "python": "python3 -c \"import sys; open(sys.argv[1], 'w').write('pwned')\" {m}",
    "node": "node -e \"require('fs').writeFileSync(process.argv[1], 'pwned')\" {m}",
    "perl": 'perl -e \'open(F, ">", $ARGV[0]) or die "Cannot open $ARGV[0]: $!"; '
    'print F "pwned"\' {m}',
    "cp": "printf pwned > src && cp src {m}",
    "copied binary": "cp /bin/cp ./mycp && printf pwned > src && ./mycp src {m}",
    "symlink": "ln -s {m} link && echo pwned > link",
    "hard link": "ln {m} hard && echo pwned > hard",
    "dd": "printf pwned | dd of={m} status=none",
    "truncate": "truncate -s 0 {m}",
}
NEEDS = {"node": NODE, "perl": PERL}


@pytest.mark.parametrize("how", list(WRITERS))
async def test_a_write_outside_the_project_is_stopped_by_the_kernel(
    worktree: Path, marker: Path, how: str
) -> None:
    if how in NEEDS and NEEDS[how] is None:
        pytest.skip(f"{how} is not installed")
    command = WRITERS[how].format(m=hidden(marker))
    off = await bash(make_host(worktree, OFF), command)
    assert marker.read_text() != "keep me\n", f"the attack does not work: {off.output}"
    marker.write_text("keep me\n")
    for leftover in ("src", "mycp", "link", "hard"):
        (worktree / leftover).unlink(missing_ok=True)

    editor = Editor(rerun="reject")
    result = await bash(make_host(worktree), command, editor)
    assert marker.read_text() == "keep me\n", result.output
    sandbox = result.metadata["sandbox"]
    assert sandbox["engine"] == "landlock"
    assert "fs-write" in sandbox["enforced"]
    if how != "hard link":  # ln reports the link it could not make, in the project
        assert f"The command tried to write {marker}" in result.output
        assert {"path": str(marker), "kind": "outside"} in sandbox["blocked"]
        (ask,) = [a for a in editor.asks if a.metadata.get("rerun")]
        assert ask.patterns == [f"{marker.parent}/*"]
        assert ask.title.startswith(f"Allow writing to {marker.parent} for this command?")


@pytest.mark.skipif(GIT is None, reason="git is not installed")
async def test_git_cannot_make_a_repository_outside(worktree: Path, outside: Path) -> None:
    command = f'cd "$(printf %s {outside})" && git init -q repo'
    await bash(make_host(worktree, OFF), command)
    assert (outside / "repo" / ".git").is_dir(), "the attack does not work"
    shutil.rmtree(outside / "repo")
    result = await bash(make_host(worktree), command)
    assert not (outside / "repo").exists(), result.output


async def test_inside_the_project_and_tmpdir_commands_write_freely(worktree: Path) -> None:
    result = await bash(
        make_host(worktree),
        'mkdir -p a/b && echo x > a/b/f && mv a/b/f a/g && echo t > "$TMPDIR/t" '
        '&& cat "$TMPDIR/t" a/g && echo $TMPDIR && rm -r a',
    )
    assert result.metadata["exit"] == 0, result.output
    lines = result.output.split()
    assert lines[:2] == ["t", "x"]
    assert "toolhost-bash-" in lines[2]
    for _ in range(100):  # removed by the supervisor, just after it reported the exit
        if not Path(lines[2]).exists():
            break
        await asyncio.sleep(0.02)
    assert not Path(lines[2]).exists()


async def test_allowing_the_directory_runs_the_command_again_with_it(
    worktree: Path, marker: Path
) -> None:
    editor = Editor(rerun="once")
    result = await bash(make_host(worktree), f"echo pwned > {hidden(marker)}", editor)
    assert marker.read_text() == "pwned\n"
    assert "the command ran a second time" in result.output
    assert result.metadata["exit"] == 0
    assert "blocked" not in result.metadata["sandbox"]


async def test_always_allowing_the_directory_keeps_it_writable(
    worktree: Path, marker: Path
) -> None:
    host = make_host(worktree)
    editor = Editor(rerun="always")
    await bash(host, f"echo one > {hidden(marker)}", editor)
    assert marker.read_text() == "one\n"
    asks = len(editor.asks)
    result = await bash(host, f"echo two > {hidden(marker)}", editor)
    assert marker.read_text() == "two\n", result.output
    assert len(editor.asks) == asks  # written the first time, no ask


async def test_allowed_dirs_and_sandbox_writable_are_writable(
    worktree: Path, tmp_path: Path
) -> None:
    data, extra = tmp_path / "data", tmp_path / "extra"
    data.mkdir()
    extra.mkdir()
    host = make_host(worktree, SandboxSettings(writable=(str(extra),)), allowed_dirs=(str(data),))
    command = f"echo a > {hidden(data / 'a')} && echo b > {hidden(extra / 'b')}"
    result = await bash(host, command)
    assert (data / "a").read_text() == "a\n", result.output
    assert (extra / "b").read_text() == "b\n"


async def test_nothing_else_in_home_is_writable(worktree: Path) -> None:
    home = Path.home()
    probe_file = home / f".toolhost-sandbox-test-{os.getpid()}"
    command = f"touch {hidden(probe_file)}"
    try:
        result = await bash(make_host(worktree), command)
        assert not probe_file.exists(), result.output
    finally:
        probe_file.unlink(missing_ok=True)


async def test_package_caches_are_writable_and_configurable(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    (cache / "pip").mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    command = f"echo wheel > {hidden(cache / 'pip' / 'w')}"
    result = await bash(make_host(worktree), command)
    assert (cache / "pip" / "w").read_text() == "wheel\n", result.output
    (cache / "pip" / "w").unlink()
    closed = make_host(worktree, SandboxSettings(caches=()))
    await bash(closed, command)
    assert not (cache / "pip" / "w").exists()


# ---------------------------------------------------------------- reads


async def test_paths_denied_for_read_cannot_be_read(worktree: Path, tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "key").write_text("hunter2\n")
    command = f"cat {hidden(secrets / 'key')}"
    off = await bash(make_host(worktree, OFF), command)
    assert "hunter2" in off.output
    rules = rules_from_config({"read": {f"{secrets}/*": "deny"}})
    result = await bash(make_host(worktree, rules=rules), command)
    assert "hunter2" not in result.output
    assert "fs-read" in result.metadata["sandbox"]["enforced"]
    listing = await bash(make_host(worktree, rules=rules), f"ls {tmp_path} && cat /etc/hostname")
    assert "secrets" in listing.output  # names can be listed, the rest read as before


# ---------------------------------------------------------------- protected paths


@pytest.fixture
def repo(worktree: Path) -> Path:
    if GIT is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    (worktree / ".opencode").mkdir()
    (worktree / ".opencode" / "tool.py").write_text("# mine\n")
    (worktree / "opencode.json").write_text("{}\n")
    return worktree


TAMPERING = {
    ".git/config": "git config core.fsmonitor 'touch pwned'",
    ".git/hooks": "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
    ".opencode": "echo '# agent' >> .opencode/tool.py",
    "opencode.json": """echo '{"permission": "allow"}' > opencode.json""",
    "rename .git": "mv .git .git-old && mkdir .git && cp -r .git-old/* .git/ "
    "&& git config core.fsmonitor 'touch pwned'",
    "remove .opencode": "rm -rf .opencode",
}


def snapshot(repo: Path) -> dict[str, str]:
    files = [repo / ".git" / "config", repo / ".opencode" / "tool.py", repo / "opencode.json"]
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    return {**{str(f): f.read_text() for f in files if f.exists()}, "hooks": ",".join(hooks)}


@pytest.mark.parametrize("what", list(TAMPERING))
async def test_protected_paths_stay_read_only_inside_the_project(repo: Path, what: str) -> None:
    before = snapshot(repo)
    command = TAMPERING[what]
    await bash(make_host(repo, OFF), command)
    assert snapshot(repo) != before, "the attack does not work"
    shutil.rmtree(repo / ".git")
    shutil.rmtree(repo / ".git-old", ignore_errors=True)
    shutil.rmtree(repo / ".opencode", ignore_errors=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".opencode").mkdir()
    (repo / ".opencode" / "tool.py").write_text("# mine\n")
    (repo / "opencode.json").write_text("{}\n")
    before = snapshot(repo)

    result = await bash(make_host(repo), command)
    assert snapshot(repo) == before, result.output
    assert "protected" in result.metadata["sandbox"]["enforced"]
    assert not (repo / ".git-old").exists()


async def test_git_still_works_in_a_protected_repository(repo: Path) -> None:
    command = (
        "echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e "
        "commit -qm first && git log --oneline | wc -l && git status --short"
    )
    result = await bash(make_host(repo), command)
    assert result.metadata["exit"] == 0, result.output
    assert result.output.split()[0] == "1"


async def test_a_linked_worktree_can_commit_but_not_touch_the_shared_hooks(
    tmp_path: Path,
) -> None:
    if GIT is None:
        pytest.skip("git is not installed")
    main, linked = tmp_path / "main", tmp_path / "linked"
    run = {"check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", str(main)], **run)  # type: ignore[call-overload]
    subprocess.run(  # type: ignore[call-overload]
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "root",
        ],
        **run,
    )
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(linked)], **run)  # type: ignore[call-overload]
    hook = main / ".git" / "hooks" / "post-commit"
    plant = "printf 'touch pwned' > \"$(git rev-parse --git-common-dir)/hooks/post-commit\""
    await bash(make_host(linked, OFF), plant)
    assert hook.exists(), "the attack does not work"
    hook.unlink()
    commit = "git add a.txt && git -c user.name=t -c user.email=t@e commit -qm a && echo committed"
    result = await bash(make_host(linked), f"echo a > a.txt && {commit}; {plant}")
    assert "committed" in result.output, result.output
    assert not hook.exists()
    assert "protected" in result.metadata["sandbox"]["enforced"]


# ---------------------------------------------------------------- network


@contextlib.contextmanager
def loopback_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records what each connection sends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    heard: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    heard.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], heard
    finally:
        stop.set()
        thread.join()
        server.close()


CONNECT = (
    "python3 -c \"import socket,sys; s=socket.create_connection(('127.0.0.1', int(sys.argv[1])), "
    "timeout=2); s.sendall(b'hello\\n')\" {port}"
)
UDP = (
    'python3 -c "import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
    "s.sendto(b'hello', ('127.0.0.1', int(sys.argv[1])))\" {port}"
)


@pytest.mark.parametrize("simulated", ["", "no-userns"], ids=["namespace", "seccomp"])
async def test_network_deny_stops_a_loopback_connection(
    worktree: Path, simulate: Any, simulated: str
) -> None:
    simulate(simulated)
    with loopback_server() as (port, heard):
        await bash(make_host(worktree), CONNECT.format(port=port))
        await asyncio.sleep(0.3)
        assert heard == [b"hello\n"], "the attack does not work"
        result = await bash(
            make_host(worktree, SandboxSettings(network="deny")), CONNECT.format(port=port)
        )
        await asyncio.sleep(0.3)
        assert heard == [b"hello\n"], result.output
    assert result.metadata["sandbox"]["network"] == "deny"
    assert "network" in result.metadata["sandbox"]["enforced"]
    assert "The network is off for commands" in result.output or result.metadata["exit"] != 0


@pytest.mark.parametrize("simulated", ["", "no-userns"], ids=["namespace", "seccomp"])
async def test_network_deny_stops_udp_too(worktree: Path, simulate: Any, simulated: str) -> None:
    simulate(simulated)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(1)
        port = receiver.getsockname()[1]
        await bash(make_host(worktree), UDP.format(port=port))
        assert receiver.recv(100) == b"hello", "the attack does not work"
        result = await bash(
            make_host(worktree, SandboxSettings(network="deny")), UDP.format(port=port)
        )
        with pytest.raises(TimeoutError):
            receiver.recv(100)
    assert result.metadata["exit"] != 0


# ---------------------------------------------------------------- fallbacks


async def test_without_any_sandbox_required_refuses_to_run(worktree: Path, simulate: Any) -> None:
    simulate("none")
    made = worktree / "made"
    result = await bash(make_host(worktree, SandboxSettings(mode="required")), "touch made")
    assert result.is_error
    assert result.metadata["error"] == "permission_denied"
    assert "sandbox.mode: required" in result.output and "Nothing was run" in result.output
    assert not made.exists()


async def test_without_any_sandbox_auto_runs_and_says_so(
    worktree: Path, marker: Path, simulate: Any
) -> None:
    simulate("none")
    result = await bash(make_host(worktree), f"echo pwned > {hidden(marker)}")
    assert marker.read_text() == "pwned\n"  # nothing stopped it: and it says so
    sandbox = result.metadata["sandbox"]
    assert sandbox["engine"] == "none"
    assert sandbox["enforced"] == ["processes"]
    assert any("neither Landlock nor bubblewrap" in m for m in sandbox["missing"])


async def test_mode_off_never_sandboxes(worktree: Path) -> None:
    result = await bash(make_host(worktree, OFF), "true")
    assert result.metadata["sandbox"] == {
        "mode": "off",
        "engine": "none",
        "enforced": ["processes"],
        "network": "allow",
    }


async def test_without_user_namespaces_landlock_still_holds_writes(
    repo: Path, marker: Path, simulate: Any
) -> None:
    simulate("no-userns")
    result = await bash(make_host(repo), f"echo pwned > {hidden(marker)}; echo x >> .git/config")
    assert marker.read_text() == "keep me\n"
    sandbox = result.metadata["sandbox"]
    assert sandbox["engine"] == "landlock"
    assert "protected" not in sandbox["enforced"]
    assert any(m.startswith("protected paths are not read-only") for m in sandbox["missing"])


BWRAP = shutil.which("bwrap")


@pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not installed (Debian: bubblewrap)")
async def test_bubblewrap_is_the_engine_without_landlock(
    repo: Path, marker: Path, simulate: Any
) -> None:
    simulate("no-landlock")
    before = snapshot(repo)
    with loopback_server() as (port, heard):
        command = (
            f"echo pwned > {hidden(marker)}; echo x >> .git/config; "
            f"{CONNECT.format(port=port)}; echo in > inside.txt"
        )
        result = await bash(make_host(repo, SandboxSettings(network="deny")), command)
        await asyncio.sleep(0.3)
        assert heard == []
    assert marker.read_text() == "keep me\n", result.output
    assert snapshot(repo) == before
    assert (repo / "inside.txt").read_text() == "in\n"
    sandbox = result.metadata["sandbox"]
    assert sandbox["engine"] == "bwrap"
    assert set(sandbox["enforced"]) >= {"fs-write", "protected", "network", "processes"}


# ---------------------------------------------------------------- the supervisor


async def test_the_supervisor_is_small_and_started_once(worktree: Path) -> None:
    host = make_host(worktree)
    await bash(host, "true")
    first = client.current()
    await bash(host, "true")
    assert first is not None and client.current() is first
    status = Path(f"/proc/{first.pid}/status").read_text()
    rss_kb = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
    assert rss_kb < 40_000  # stdlib only: no pydantic, tree-sitter or pygls


async def test_the_supervisor_keeps_no_finished_commands_filter(worktree: Path) -> None:
    """Each command's seccomp listener is closed once its processes are gone: kept,
    the supervisor served every finished command's listener on every wake-up (each
    call slower than the last) until it ran out of file descriptors."""
    host = make_host(worktree)
    await bash(host, "true")
    supervisor = client.current()
    assert supervisor is not None

    def open_fds() -> int:
        return len(os.listdir(f"/proc/{supervisor.pid}/fd"))

    before = open_fds()
    for _ in range(20):
        result = await bash(host, "true")
        assert result.metadata["exit"] == 0
    await asyncio.sleep(0.2)  # the last one's hang-up reaches the supervisor's loop
    assert open_fds() <= before + 2


# ---------------------------------------------------------------- hidden sockets


CONNECT_UNIX = (
    'python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); '
    "s.sendall(b'run this')\" {path}"
)


async def test_sockets_that_run_commands_outside_are_hidden(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A D-Bus session bus would run `systemd-run --user` outside the sandbox: with a
    mount namespace, $XDG_RUNTIME_DIR/bus is covered (and toolhost's runtime folder,
    where the lock files and their tokens live, cannot be read)."""
    runtime = tmp_path / "runtime"
    (runtime / "toolhost").mkdir(parents=True)
    (runtime / "toolhost" / "sidecar-1.json").write_text('{"token": "s3cret"}')
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    bus = socket.socket(socket.AF_UNIX)
    bus.bind(str(runtime / "bus"))
    bus.listen()
    bus.settimeout(1)
    command = CONNECT_UNIX.format(path=runtime / "bus")
    token = f"cat {hidden(runtime / 'toolhost' / 'sidecar-1.json')}"
    try:
        off = await bash(make_host(worktree, OFF), f"{command}; {token}")
        conn, _ = bus.accept()
        assert conn.recv(100) == b"run this", "the attack does not work"
        conn.close()
        assert "s3cret" in off.output
        result = await bash(make_host(worktree), f"{command}; {token}")
        with pytest.raises(TimeoutError):
            bus.accept()
        assert "s3cret" not in result.output
    finally:
        bus.close()


async def test_a_hidden_folder_removed_before_the_command_starts_does_not_stop_it(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the plan lists to hide can be gone when the command starts: a relay's
    folder whose ``toolhost acp`` ended, an editor's socket. Nothing is left to hide, so
    the command runs (it failed with "mounts: No such file or directory")."""
    gone = tmp_path / "toolhost-acp-ended"
    gone.mkdir()
    listed = plan_module._existing

    def listed_then_removed(paths: Any, *rest: Any) -> list[str]:
        found = listed(paths, *rest)
        if str(gone) in found:
            gone.rmdir()  # between the plan and the command's mounts
        return found

    monkeypatch.setattr(plan_module, "_existing", listed_then_removed)
    host = make_host(worktree, SandboxSettings(hidden=(str(gone),)))
    result = await bash(host, "echo ran")
    assert not gone.exists(), "the plan never listed the folder"
    assert result.output.strip() == "ran", result.output


async def test_without_a_mount_namespace_the_tokens_are_still_unreadable(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, simulate: Any
) -> None:
    simulate("no-userns")
    runtime = tmp_path / "runtime"
    (runtime / "toolhost").mkdir(parents=True)
    (runtime / "toolhost" / "sidecar-1.json").write_text('{"token": "s3cret"}')
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    token = f"cat {hidden(runtime / 'toolhost' / 'sidecar-1.json')}"
    assert "s3cret" in (await bash(make_host(worktree, OFF), token)).output
    result = await bash(make_host(worktree), token)
    assert "s3cret" not in result.output
    assert "fs-read" in result.metadata["sandbox"]["enforced"]
