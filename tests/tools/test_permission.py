"""OpenCode's rule evaluation and the ask flow."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tools.errors import PermissionDeniedError, PermissionRejectedError
from tools.permission.asks import PermissionReply, PermissionRequest
from tools.permission.defaults import default_rules
from tools.permission.rules import Rule, evaluate, rules_from_config, wildcard_match
from tools.permission.service import PermissionService


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("src/a/b.py", "src/*", True),  # * crosses /
        ("ls", "ls *", True),  # a trailing " *" also matches the bare command
        ("ls -la", "ls *", True),
        ("lsof", "ls *", False),
        ("git log", "git log *", True),
        ("a.env", "*.env", True),
        ("a.env.example", "*.env", False),
        ("x", "?", True),
        ("xy", "?", False),
        ("a+b(c)", "a+b(c)", True),  # regex characters are literal
        ("C:\\dir\\f", "C:/dir/*", True),
        ("line1\nline2", "line1*", True),
    ],
)
def test_wildcard(text: str, pattern: str, expected: bool) -> None:
    assert wildcard_match(text, pattern) is expected


def test_last_matching_rule_wins_regardless_of_specificity() -> None:
    rules = rules_from_config({"bash": {"git *": "deny", "*": "allow"}})
    assert evaluate("bash", "git push", rules).action == "allow"
    rules = rules_from_config({"bash": {"*": "allow", "git *": "deny"}})
    assert evaluate("bash", "git push", rules).action == "deny"


def test_no_match_asks() -> None:
    assert evaluate("edit", "a.py", []).action == "ask"


def test_config_shapes() -> None:
    assert rules_from_config("deny") == [Rule("*", "*", "deny")]
    assert rules_from_config({"edit": "ask"}) == [Rule("edit", "*", "ask")]
    home = str(Path.home())
    assert rules_from_config({"read": {"~/secret/*": "deny"}}) == [
        Rule("read", f"{home}/secret/*", "deny")
    ]
    with pytest.raises(ValueError, match=r"permission.edit must be one of allow, ask, deny"):
        rules_from_config({"edit": "sometimes"})


def test_defaults_match_opencode() -> None:
    rules = default_rules(Path("/data/tool-output"))
    assert evaluate("edit", "a.py", rules).action == "allow"
    assert evaluate("external_directory", "/etc/*", rules).action == "ask"
    assert evaluate("external_directory", "/data/tool-output/*", rules).action == "allow"
    for name in (".env", "app/.env.local", ".env.production", ".env.development.local"):
        assert evaluate("read", name, rules).action == "ask", name
    for name in (".env.example", ".envrc", "environment.ts"):
        assert evaluate("read", name, rules).action == "allow", name
    assert evaluate("doom_loop", "read", rules).action == "ask"


def request(patterns: list[str], always: list[str] | None = None, session: str = "s1"):
    return PermissionRequest(
        session_id=session,
        call_id="c",
        message_id="m",
        tool="bash",
        permission="bash",
        patterns=patterns,
        always=always or ["git *"],
        title="t",
    )


async def test_allow_does_not_ask_and_deny_names_the_rule() -> None:
    service = PermissionService(
        lambda agent: rules_from_config({"bash": {"*": "allow", "rm *": "deny"}})
    )

    async def never(req: PermissionRequest) -> PermissionReply:
        raise AssertionError("should not ask")

    await service.ask(request(["ls"]), "build", never)
    with pytest.raises(PermissionDeniedError) as denied:
        await service.ask(request(["ls", "rm -rf x"]), "build", never)
    assert '"pattern": "rm *"' in denied.value.message
    assert denied.value.kind == "permission_denied"


async def test_always_is_remembered_for_every_session() -> None:
    service = PermissionService(lambda agent: [])
    asked: list[PermissionRequest] = []

    async def always(req: PermissionRequest) -> PermissionReply:
        asked.append(req)
        return PermissionReply("always")

    await service.ask(request(["git status"], ["git status *"]), "build", always)
    await service.ask(request(["git status -s"], session="s2"), "build", always)
    assert len(asked) == 1


async def test_reject_with_feedback_carries_the_message() -> None:
    service = PermissionService(lambda agent: [])

    async def reject(req: PermissionRequest) -> PermissionReply:
        return PermissionReply("reject", "use git diff instead")

    with pytest.raises(PermissionRejectedError, match="following feedback: use git diff instead"):
        await service.ask(request(["git log"]), "build", reject)


async def test_reject_rejects_other_pending_asks_of_the_session() -> None:
    service = PermissionService(lambda agent: [])
    release = asyncio.Event()

    async def slow_once(req: PermissionRequest) -> PermissionReply:
        await release.wait()
        return PermissionReply("once")

    async def reject(req: PermissionRequest) -> PermissionReply:
        return PermissionReply("reject")

    waiting = asyncio.ensure_future(service.ask(request(["a"]), "build", slow_once))
    other_session = asyncio.ensure_future(
        service.ask(request(["a"], session="s2"), "build", slow_once)
    )
    await asyncio.sleep(0.01)
    with pytest.raises(PermissionRejectedError):
        await service.ask(request(["b"]), "build", reject)
    with pytest.raises(PermissionRejectedError):
        await waiting
    assert not other_session.done()
    release.set()
    await other_session


async def test_third_identical_call_asks_doom_loop(worktree: Path) -> None:
    from tests.conftest import RecordingEditor
    from tools.host import ToolHost
    from tools.tool import define

    async def noop(args, ctx) -> str:
        return "ok"

    host = ToolHost(worktree, tools=[define("noop", execute=noop, description="x")])
    editor = RecordingEditor(reply="reject")
    results = [await host.execute("noop", {}, editor=editor, session_id="s") for _ in range(2)]
    assert not any(r.is_error for r in results) and editor.asks == []
    third = await host.execute("noop", {}, editor=editor, session_id="s")
    assert third.is_error and third.metadata["error"] == "permission_rejected"
    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always) == ("doom_loop", ["noop"], ["noop"])
    other_session = await host.execute("noop", {}, editor=editor, session_id="t")
    assert not other_session.is_error


async def test_always_settles_other_waiting_asks_it_covers() -> None:
    service = PermissionService(lambda agent: [])
    never = asyncio.Event()
    withdrawn: list[str] = []

    async def slow(req: PermissionRequest) -> PermissionReply:
        try:
            await never.wait()
        finally:
            withdrawn.append(req.patterns[0])
        return PermissionReply("reject")

    async def always(req: PermissionRequest) -> PermissionReply:
        return PermissionReply("always")

    covered = asyncio.ensure_future(service.ask(request(["git log"]), "build", slow))
    not_covered = asyncio.ensure_future(service.ask(request(["npm test"]), "build", slow))
    await asyncio.sleep(0.01)
    await service.ask(request(["git status"], ["git *"]), "build", always)
    await asyncio.wait_for(covered, 1)  # allowed without an answer of its own
    assert withdrawn == ["git log"]  # its prompt was withdrawn from the client
    assert not not_covered.done()
    not_covered.cancel()


async def test_force_asks_even_when_allowed_but_deny_still_wins() -> None:
    service = PermissionService(lambda agent: rules_from_config({"bash": {"*": "allow"}}))
    asked: list[PermissionRequest] = []

    async def once(req: PermissionRequest) -> PermissionReply:
        asked.append(req)
        return PermissionReply("once")

    await service.ask(request(["$cmd x"]), "build", once, force=True)
    assert len(asked) == 1
    denying = PermissionService(lambda agent: rules_from_config({"bash": "deny"}))
    with pytest.raises(PermissionDeniedError):
        await denying.ask(request(["$cmd x"]), "build", once, force=True)


def test_indexed_rules_remember_each_match_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools.permission import rules as permission

    rules = permission.IndexedRules(
        [Rule("read", "*", "allow"), Rule("read", "*.env", "deny"), Rule("*", "secret*", "ask")]
    )
    for _ in range(2):  # the second time from the memo: the same answers
        assert permission.evaluate("read", "a.env", rules).action == "deny"
        assert permission.evaluate("read", "a.txt", rules).action == "allow"
        assert permission.evaluate("read", "secret.txt", rules).action == "ask"
        assert permission.evaluate("edit", "a.txt", rules) == Rule("edit", "*", "ask")
    monkeypatch.setattr(permission, "MAX_REMEMBERED_MATCHES", 3)
    for index in range(10):
        assert permission.evaluate("read", f"file{index}.env", rules).action == "deny"
    assert len(rules._last) <= 3
