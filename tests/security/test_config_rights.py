"""Every config key that can widen what an agent may do waits for a person.

The attack: rewriting ``experimental.primary_tools`` (bash no longer primary-only: a
sub-agent gets it), ``subagent_depth`` (grandchildren) or
``experimental.continue_loop_on_deny`` (a loop that goes on after every rejection)
on disk.  With the defence off (only permissions compared, as before) the sidecar's
state applies them at once; with it on, the accepted values hold until a person
accepts.  The check is derived from the config model: each field declares how it
can widen (``tools.config.rights``), and a field that declares nothing fails here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from server.state import CONFIG, ServerState
from tools.config import loosening
from tools.config.agents import AgentConfig
from tools.config.effective import Config, ConfigLayer
from tools.config.rights import KINDS

BEFORE = {
    "experimental": {"primary_tools": ["bash"], "continue_loop_on_deny": False},
    "subagent_depth": 1,
}
WIDER = {
    "primary_tools": {"experimental": {"primary_tools": []}, "subagent_depth": 1},
    "subagent_depth": {**BEFORE, "subagent_depth": 5},
    "continue_loop_on_deny": {
        "experimental": {"primary_tools": ["bash"], "continue_loop_on_deny": True},
        "subagent_depth": 1,
    },
}
OLD_CHECK = ("fewer", "on_widens", "higher_widens")  # kinds the old check did not compare


def old_check(monkeypatch: pytest.MonkeyPatch) -> None:
    compare = loosening.compare

    def only_what_it_compared(kind: Any, *args: Any) -> list[str]:
        return [] if kind in OLD_CHECK else compare(kind, *args)

    monkeypatch.setattr(loosening, "compare", only_what_it_compared)


async def rewrite(worktree: Path, key: str) -> ServerState:
    (worktree / "opencode.json").write_text(json.dumps(BEFORE))
    state = ServerState.build({"trusted": True}, worktree)
    await state._load()
    (worktree / "opencode.json").write_text(json.dumps(WIDER[key]))
    await state._changed({CONFIG})  # what the watcher does when it sees the file
    return state


def in_force(state: ServerState, key: str) -> Any:
    return getattr(state.host.config, key)


@pytest.mark.parametrize("key", list(WIDER))
async def test_a_widening_key_applies_at_once_without_the_defence(
    worktree: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_check(monkeypatch)
    state = await rewrite(worktree, key)
    assert state.pending_change is None  # nobody is asked
    assert in_force(state, key) != in_force_before(key)  # the attack works


@pytest.mark.parametrize("key", list(WIDER))
async def test_a_widening_key_waits_for_a_person(worktree: Path, key: str) -> None:
    state = await rewrite(worktree, key)
    assert in_force(state, key) == in_force_before(key)
    assert state.accepted is not None
    found = loosening.loosenings(state.accepted, state.loaded.config)  # type: ignore[union-attr]
    assert any(key in phrase for phrase in found), found


def in_force_before(key: str) -> Any:
    return {"primary_tools": ("bash",), "subagent_depth": 1, "continue_loop_on_deny": False}[key]


def test_the_tightening_direction_applies_at_once() -> None:
    wide = Config(subagent_depth=3, continue_loop_on_deny=True)
    narrow = Config(subagent_depth=1, primary_tools=("bash",))
    assert loosening.loosenings(wide, narrow) == []


@pytest.mark.parametrize("model", [Config, AgentConfig])
def test_every_config_key_declares_how_it_can_widen(model: type) -> None:
    undeclared = [f.name for f in fields(model) if f.metadata.get("rights") not in KINDS]
    assert undeclared == [], f"declare rights(...) for {undeclared} (tools.config.rights)"


def test_every_key_a_config_file_sets_reaches_a_declared_field() -> None:
    into = {"max_lines": "tool_output", "max_bytes": "tool_output"}
    names = {f.name for f in fields(Config)}
    assert [f.name for f in fields(ConfigLayer) if into.get(f.name, f.name) not in names] == []


def test_an_undeclared_key_stops_the_check() -> None:
    @dataclass(frozen=True)
    class Later:
        new_key: bool = False  # a key added without saying whether it widens

    with pytest.raises(loosening.UndeclaredKey, match="new_key"):
        loosening.declared(fields(Later)[0])
