"""Which tools are offered to which model, config and client."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.config.effective import Config
from tools.host import ToolHost
from tools.model import ModelRef
from tools.registry import uses_apply_patch
from tools.tool import define


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("gpt-5", True),
        ("gpt-5.1-codex", True),
        ("gpt-4o", False),
        ("gpt-4.1", False),
        ("gpt-oss-120b", False),
        ("claude-sonnet-4", False),
        ("o3", False),
    ],
)
def test_apply_patch_rule(model_id: str, expected: bool) -> None:
    assert uses_apply_patch(ModelRef("openai", model_id)) is expected


async def _noop(args, ctx) -> str:
    return ""


def fake(tool_id: str, requires: frozenset[str] = frozenset()):
    return define(tool_id, execute=_noop, description=tool_id, requires=requires)


def host(worktree: Path, **config) -> ToolHost:
    tools = [
        fake(name)
        for name in ("apply_patch", "write", "read", "edit", "bash", "multiedit", "zeta", "alpha")
    ] + [fake("lsp", frozenset({"lsp"}))]
    return ToolHost(worktree, tools=tools, config=Config(**config))


def ids(tools) -> list[str]:
    return [t.id for t in tools]


def test_fixed_order_then_others_sorted(worktree: Path) -> None:
    offered = host(worktree).offered(capabilities=frozenset({"lsp"}))
    assert ids(offered) == ["bash", "read", "edit", "write", "multiedit", "lsp", "alpha", "zeta"]


def test_gpt_models_get_apply_patch_instead_of_edits(worktree: Path) -> None:
    offered = ids(host(worktree).offered(model=ModelRef("openai", "gpt-5")))
    assert "apply_patch" in offered
    assert not {"edit", "write", "multiedit"} & set(offered)


def test_client_without_the_request_does_not_get_the_tool(worktree: Path) -> None:
    assert "lsp" not in ids(host(worktree).offered())


def test_config_disables(worktree: Path) -> None:
    assert "bash" not in ids(host(worktree, enabled={"bash": False}).offered())


async def test_model_filter_does_not_stop_execution(worktree: Path) -> None:
    result = await host(worktree).execute("edit", {}, model=ModelRef("openai", "gpt-5"))
    assert not result.is_error


def test_agent_blanket_denies_hide_tools(worktree: Path) -> None:
    explore = ids(host(worktree).offered(agent="explore"))
    assert "read" in explore and "bash" in explore
    assert not {"edit", "write", "multiedit", "apply_patch"} & set(explore)
    plan = ids(host(worktree).offered(agent="plan"))
    assert "edit" in plan  # plan denies edits except plan files: not a blanket deny


def test_pattern_specific_deny_keeps_the_tool(worktree: Path) -> None:
    from tools.permission.rules import rules_from_config

    rules = rules_from_config({"bash": {"rm *": "deny"}})
    assert "bash" in ids(host(worktree, rules=rules).offered())
    blanket = rules_from_config({"bash": "deny"})
    assert "bash" not in ids(host(worktree, rules=blanket).offered())
