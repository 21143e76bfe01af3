"""The sandboxes a case runs under, each set up with the same writable folder (the
project) and the same domain list (``DOMAINS``; nothing else reachable).

- ``NoSandbox``: plain bash, where every attack must work.
- ``Toolhost``: toolhost's ``bash`` tool in-process (``ToolHost.execute``, as the other
  security tests run it), its config read from opencode.json's ``sandbox`` object:
  ``caches: []`` and ``network: {allow: DOMAINS}``; where this checkout cannot read a
  domain list yet, ``network: "deny"`` and ``domains`` is False.  ``permission`` is
  ``{"*": "allow"}`` and the one ask left ("run it again with this folder writable")
  is rejected: what is measured is the kernel, not the prompts.
- ``Srt``: Claude Code's sandbox-runtime, ``srt --settings <file> -c <script>``.
- ``Codex``: ``codex sandbox`` (Codex CLI 0.171, where ``codex sandbox linux`` became
  ``codex sandbox``) in ``workspace-write`` with no extra writable roots, and its
  network proxy with the domain list.

Each run is its own session for srt and Codex (the wrapper exits with the command);
toolhost's session is its supervisor, which ``end`` stops as the sidecar's exit would.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tests.security.escapes.world import World
from tools.bash.sandbox import client, probe
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.errors import ConfigError
from tools.config.opencode import config_from_opencode
from tools.editor import EditorBridge
from tools.host import ToolHost
from tools.permission.asks import PermissionReply, PermissionRequest

DOMAINS = ("pypi.org",)  # allowed; registry.npmjs.org is the not-allowed one
GRACE = 0.5  # output still arriving after the command's first process exited


@dataclass(frozen=True)
class Ran:
    output: str
    status: int | None


class Sandbox(Protocol):
    name: str
    domains: bool  # set up with the domain list (else: no network at all)

    def unavailable(self) -> str | None: ...

    async def run(
        self, world: World, script: str, *, timeout: float, abort_after: float | None
    ) -> Ran: ...

    async def end(self) -> None: ...


async def run_argv(
    argv: list[str], world: World, *, timeout: float, abort_after: float | None
) -> Ran:
    """Run a wrapper in its own process group; after ``abort_after`` (or ``timeout``)
    the group is killed, as an agent stops a command.  The output is what arrived
    until the first process exited, and a little after."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=world.project,
        env=world.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    chunks: list[bytes] = []

    async def read() -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            chunks.append(chunk)

    reader = asyncio.ensure_future(read())
    try:
        await asyncio.wait_for(process.wait(), abort_after or timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(reader), GRACE)
    reader.cancel()
    return Ran(b"".join(chunks).decode(errors="replace"), process.returncode)


class NoSandbox:
    name = "none"
    domains = True

    def unavailable(self) -> str | None:
        return None

    async def run(
        self, world: World, script: str, *, timeout: float, abort_after: float | None
    ) -> Ran:
        # bash's parent is this sh, never the harness: `kill $PPID` ends only the sh.
        argv = ["sh", "-c", 'bash --noprofile --norc -c "$1"; exit $?', "sh", script]
        return await run_argv(argv, world, timeout=timeout, abort_after=abort_after)

    async def end(self) -> None:
        return None


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` meanwhile (the in-process sidecar reads HOME from it)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Toolhost:
    name = "toolhost"

    def __init__(self) -> None:
        try:
            network: object = {"allow": list(DOMAINS), "deny": []}
            self.config = config_from_opencode(_config(network))
            self.domains = True
        except ConfigError:
            self.config = config_from_opencode(_config("deny"))
            self.domains = False

    def unavailable(self) -> str | None:
        support = probe.probe()
        if support.landlock_abi < 3 and not support.bwrap:
            return "neither Landlock ABI 3 nor bubblewrap here"
        return None

    async def run(
        self, world: World, script: str, *, timeout: float, abort_after: float | None
    ) -> Ran:
        host = ToolHost(
            world.project, tools=[*builtin_tools(), bash_module.tool], config=self.config
        )
        args = {
            "command": script,
            "description": "Runs an escape case",
            "timeout": int((abort_after or timeout) * 1000),
        }
        with environment(world.env):
            result = await host.execute("bash", args, editor=Rejecter(), session_id="ses_escape")
        status = result.metadata.get("exit")
        return Ran(result.output, status if isinstance(status, int) else None)

    async def end(self) -> None:
        supervisor = client.current()
        if supervisor is not None:
            await asyncio.to_thread(supervisor.close)


def _config(network: object) -> dict[str, object]:
    """Every permission allowed, so no prompt stands between the attack and the kernel
    (a wildcard rule never makes a folder writable: only literal rules and a person's
    answers do), no package caches writable, and the network as given."""
    return {"permission": {"*": "allow"}, "sandbox": {"caches": [], "network": network}}


class Rejecter(EditorBridge):
    """Rejects every ask: nobody widens what the command may do (the rules allow
    everything else, so the only asks left are "run it again with this folder
    writable", which are asked whatever the rules say)."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        return PermissionReply("reject")

    def show_message(self, message: str) -> None:
        return None  # "the user did not allow writing to ...": expected, every time


class Srt:
    """``srt`` (npm ``@anthropic-ai/sandbox-runtime``): bubblewrap, a seccomp filter on
    Unix sockets, and HTTP/SOCKS proxies outside for the domain list."""

    name = "srt"
    domains = True

    def __init__(self, binary: Path | None, why: str = "") -> None:
        self.binary, self.why = binary, why

    def unavailable(self) -> str | None:
        return None if self.binary else self.why

    async def run(
        self, world: World, script: str, *, timeout: float, abort_after: float | None
    ) -> Ran:
        assert self.binary is not None
        settings = world.root / "srt-settings.json"
        settings.write_text(
            json.dumps(
                {
                    "network": {"allowedDomains": list(DOMAINS), "deniedDomains": []},
                    "filesystem": {
                        "denyRead": [],
                        "allowWrite": [str(world.project)],
                        "denyWrite": [],
                    },
                }
            )
        )
        argv = [str(self.binary), "--settings", str(settings), "-c", script]
        return await run_argv(argv, world, timeout=timeout, abort_after=abort_after)

    async def end(self) -> None:
        return None


def codex_needs_local_binding() -> bool:
    """Codex's proxy refuses a name that resolves to a non-public address unless
    ``allow_local_binding``; this machine's registries may resolve to one."""
    try:
        infos = socket.getaddrinfo(DOMAINS[0], 443, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return any(not ipaddress.ip_address(info[4][0]).is_global for info in infos)


class Codex:
    """``codex sandbox`` in ``workspace-write`` (the project, /tmp and $TMPDIR writable,
    ``.git`` and ``.codex`` read-only), network through its proxy with the domain list."""

    name = "codex"
    domains = True

    def __init__(self, binary: Path | None, home: Path | None, why: str = "") -> None:
        self.binary, self.home, self.why = binary, home, why
        self.local_binding = codex_needs_local_binding() if binary else False

    def unavailable(self) -> str | None:
        return None if self.binary else self.why

    def overrides(self) -> list[str]:
        domains = ", ".join(f'"{d}" = "allow"' for d in DOMAINS)
        found = [
            'sandbox_mode="workspace-write"',
            "sandbox_workspace_write.writable_roots=[]",
            "sandbox_workspace_write.network_access=true",
            "features.network_proxy.enabled=true",
            f"features.network_proxy.domains={{ {domains} }}",
        ]
        if self.local_binding:
            found.append("features.network_proxy.allow_local_binding=true")
        return [arg for item in found for arg in ("-c", item)]

    async def run(
        self, world: World, script: str, *, timeout: float, abort_after: float | None
    ) -> Ran:
        assert self.binary is not None and self.home is not None
        argv = [str(self.binary), "sandbox", *self.overrides(), "--", "bash", "-c", script]
        world.env["CODEX_HOME"] = str(self.home)
        try:
            return await run_argv(argv, world, timeout=timeout, abort_after=abort_after)
        finally:
            world.env.pop("CODEX_HOME", None)

    async def end(self) -> None:
        return None
