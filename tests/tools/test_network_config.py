"""``sandbox.network``'s domain lists as config and as patterns (issue 27): the syntax, what
matches what, which addresses are private, both config formats with their mistakes, a
broken config meaning no network, and a wider list waiting for a person."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import fields
from pathlib import Path

import pytest

from server.state import CONFIG, ServerState
from tools.config.effective import NetworkLists, SandboxSettings
from tools.config.files import load_config
from tools.config.loosening import held, loosenings
from tools.config.rights import KINDS
from tools.network.addresses import is_private
from tools.network.patterns import BadHost, parse_destination, parse_pattern


def matches(pattern: str, host: str, port: int = 443) -> bool:
    return parse_pattern(pattern).matches(parse_destination(host, port))


@pytest.mark.parametrize(
    ("pattern", "host", "port", "expected"),
    [
        ("pypi.org", "pypi.org", 443, True),
        ("pypi.org", "PyPI.org.", 80, True),  # case and a trailing dot change nothing
        ("pypi.org", "files.pypi.org", 443, False),
        ("pypi.org", "pypi.org.evil.test", 443, False),
        ("*.npmjs.org", "registry.npmjs.org", 443, True),
        ("*.npmjs.org", "a.b.npmjs.org", 443, True),
        ("*.npmjs.org", "npmjs.org", 443, False),  # below it, not itself
        ("*.npmjs.org", "evilnpmjs.org", 443, False),
        ("github.com:443", "github.com", 443, True),
        ("github.com:443", "github.com", 22, False),
        ("*", "anything.test", 1, True),
        ("10.0.0.5", "10.0.0.5", 5432, True),
        ("10.0.0.5", "::ffff:10.0.0.5", 5432, True),  # the same host, written as IPv6
        ("10.0.0.5:5432", "10.0.0.5", 5433, False),
        ("[::1]:8080", "::1", 8080, True),
        ("::1", "[::1]", 1, True),
        ("pypi.org", "151.101.0.223", 443, False),  # a name never covers an address
        ("bücher.example", "xn--bcher-kva.example", 443, True),
    ],
)
def test_what_a_pattern_matches(pattern: str, host: str, port: int, expected: bool) -> None:
    assert matches(pattern, host, port) is expected


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("*.*.example.com", "a wildcard may only start a pattern"),
        ("pypi*.org", "a wildcard may only start a pattern"),
        ("pypi.org:99999", "is not a port"),
        ("pypi.org:", "is not a port"),
        ("*.10.0.0.1", "a wildcard"),
        ("exa mple.com", "is not a valid host name"),
        ("[::1", "an unclosed ["),
    ],
)
def test_a_pattern_that_cannot_be_read_says_why(written: str, why: str) -> None:
    with pytest.raises(BadHost, match=why.replace("[", r"\[")):
        parse_pattern(written)


@pytest.mark.parametrize(
    "host", ["127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "fe80::1%eth0"]
)
def test_an_address_in_an_unusual_spelling_is_no_destination(host: str) -> None:
    with pytest.raises(BadHost):
        parse_destination(host, 80)


def test_only_a_literal_pattern_opens_a_private_address() -> None:
    loopback, private = ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("10.0.0.5")
    assert parse_pattern("localhost").names_literally(loopback, 80)
    assert parse_pattern("10.0.0.5").names_literally(private, 5432)
    assert not parse_pattern("10.0.0.5:22").names_literally(private, 5432)
    assert not parse_pattern("*").names_literally(private, 5432)
    assert not parse_pattern("*.corp.test").names_literally(private, 5432)
    assert not parse_pattern("db.corp.test").names_literally(private, 5432)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
    ],
)
def test_private_addresses(address: str) -> None:
    assert is_private(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "151.101.0.223",
        "2606:4700::1111",
        "203.0.113.80",  # documentation: where a closed network's registry mirror answers
        "2001:db8::5",
    ],
)
def test_public_addresses(address: str) -> None:
    assert not is_private(ipaddress.ip_address(address))


# ---------------------------------------------------------------- config files


@pytest.fixture
def global_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "global"
    path.mkdir()
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(path))
    return path


def test_both_formats_read_the_lists(worktree: Path, global_dir: Path) -> None:
    network = {"allow": ["pypi.org", "*.npmjs.org", "github.com:443"], "deny": ["evil.test"]}
    (worktree / "opencode.json").write_text(json.dumps({"sandbox": {"network": network}}))
    expected = NetworkLists(("pypi.org", "*.npmjs.org", "github.com:443"), ("evil.test",))
    assert load_config(worktree).config.sandbox.network == expected
    (worktree / "opencode.json").unlink()
    (worktree / ".opencode").mkdir()
    (worktree / ".opencode" / "tools.yaml").write_text(
        "tools:\n  - name: bash\n    sandbox:\n      network:\n        allow: [pypi.org, "
        '"*.npmjs.org", "github.com:443"]\n        deny: [evil.test]\n'
    )
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert loaded.config.sandbox.network == expected


@pytest.mark.parametrize(
    ("name", "text", "line", "key", "message"),
    [
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "network": {\n      "allow": [\n        "*.*.x.org"\n'
            "      ]\n    }\n  }\n}",
            5,
            "sandbox.network.allow[0]",
            "'*.*.x.org': a wildcard may only start a pattern, as `*.example.com`, or be `*`; "
            "expected a domain such as pypi.org, *.npmjs.org or github.com:443, or an address",
        ),
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "network": {\n      "alow": []\n    }\n  }\n}',
            4,
            "sandbox.network.alow",
            "unknown key (expected allow or deny)",
        ),
        (
            ".opencode/tools.yaml",
            "tools:\n  - name: bash\n    sandbox:\n      network:\n        allow: pypi.org\n",
            5,
            "tools[0].sandbox.network.allow",
            'expected a list of domains, got "pypi.org"',
        ),
    ],
)
def test_a_mistake_in_the_lists_names_file_line_and_key(
    worktree: Path, global_dir: Path, name: str, text: str, line: int, key: str, message: str
) -> None:
    path = worktree / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    (problem,) = load_config(worktree).problems
    assert (problem.file, problem.line, problem.key, problem.message) == (path, line, key, message)


def test_a_broken_config_means_no_network(worktree: Path, global_dir: Path) -> None:
    (global_dir / "opencode.json").write_text('{"sandbox": {"network": "allow"}}')
    (worktree / "opencode.json").write_text('{"sandbox": {"network": {"allow": [3]}}}')
    config = load_config(worktree).config
    assert config.failing_closed
    assert config.sandbox.network == "deny"
    (worktree / "opencode.json").write_text('{"sandbox": {"network": {"allow": ["pypi.org"]}}')
    assert load_config(worktree).config.sandbox.network == "deny"  # not even JSON: the same


# ---------------------------------------------------------------- widening


def lists(*allow: str, deny: tuple[str, ...] = ()) -> SandboxSettings:
    return SandboxSettings(network=NetworkLists(allow, deny))


def test_every_sandbox_key_declares_how_it_can_widen() -> None:
    undeclared = [f.name for f in fields(SandboxSettings) if f.metadata.get("rights") not in KINDS]
    assert undeclared == []


@pytest.mark.parametrize(
    ("before", "after", "wider"),
    [
        (lists("pypi.org"), lists("pypi.org", "evil.test"), True),
        (lists("pypi.org", deny=("evil.test",)), lists("pypi.org"), True),
        (lists("pypi.org"), SandboxSettings(network="allow"), True),
        (SandboxSettings(network="deny"), lists("pypi.org"), True),
        (lists("pypi.org", "evil.test"), lists("pypi.org"), False),
        (lists("pypi.org"), lists("pypi.org", deny=("x.pypi.org",)), False),
        (SandboxSettings(network="allow"), lists("pypi.org"), False),
        (lists("pypi.org"), SandboxSettings(network="deny"), False),
    ],
)
def test_a_wider_list_is_a_loosening(
    before: SandboxSettings, after: SandboxSettings, wider: bool
) -> None:
    from tools.config.effective import Config

    found = loosenings(Config(sandbox=before), Config(sandbox=after))
    assert bool(found) is wider, found
    if wider:
        assert all(phrase.startswith("sandbox.network") for phrase in found)
        # Meanwhile what holds allows no more than the accepted config.
        kept = held(Config(sandbox=before), Config(sandbox=after)).sandbox.network
        assert (
            loosenings(Config(sandbox=before), Config(sandbox=SandboxSettings(network=kept))) == []
        )


async def test_a_wider_list_written_on_disk_waits_for_a_person(worktree: Path) -> None:
    def write(allow: list[str]) -> None:
        config = {"sandbox": {"network": {"allow": allow}}}
        (worktree / "opencode.json").write_text(json.dumps(config))

    write(["pypi.org"])
    state = ServerState.build({"trusted": True}, worktree)
    await state._load()
    write(["pypi.org", "evil.test"])
    await state._changed({CONFIG})  # what the watcher does when it sees the file
    assert state.host.config.sandbox.network == NetworkLists(("pypi.org",))
    assert state.accepted is not None and state.loaded is not None
    assert loosenings(state.accepted, state.loaded.config) == [
        "sandbox.network.allow adds 'evil.test'"
    ]
    write([])  # narrower: at once
    await state._changed({CONFIG})
    assert state.host.config.sandbox.network == NetworkLists(())
