"""initializationOptions parsing (pure): defaults for bad fields, a config that fails closed."""

from __future__ import annotations

from typing import Any

import pytest

from server.options import FAIL_CLOSED_RULES, InitOptions, fail_closed_config, parse_options
from tools.config.effective import Config
from tools.model import ModelRef
from tools.permission.rules import evaluate


def action(config: Config, permission: str, pattern: str = "*") -> str:
    return evaluate(permission, pattern, config.rules).action


def test_missing_options_are_the_defaults() -> None:
    assert parse_options(None) == (InitOptions(), [])
    assert parse_options({}) == (InitOptions(), [])


def test_every_field() -> None:
    options, problems = parse_options(
        {
            "sessionID": "ses_1",
            "agent": "plan",
            "model": {"providerID": "openai", "modelID": "gpt-5"},
            "config": {"tools": {"grep": False}},
            "editor": {"permissionAsk": True, "applyEdit": False, "lsp": True},
        }
    )
    assert problems == []
    assert options.session_id == "ses_1"
    assert options.agent == "plan"
    assert options.model == ModelRef("openai", "gpt-5")
    assert not options.config.is_enabled("grep")
    assert options.editor == frozenset({"permissionAsk", "lsp"})
    assert options.config_error is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"sessionID": 5}, "sessionID"),
        ({"agent": ["build"]}, "agent"),
        ({"model": "gpt-5"}, "model"),
        ({"model": {"providerID": "openai"}}, "modelID"),
        ({"editor": True}, "editor"),
        ({"editor": {"permissionAsk": "yes"}}, "editor.permissionAsk"),
        ({"editor": {"telepathy": True}}, "editor.telepathy"),
    ],
)
def test_a_wrong_field_becomes_its_default_with_a_problem(raw: dict[str, Any], field: str) -> None:
    options, problems = parse_options(raw)
    assert options == InitOptions()
    assert len(problems) == 1 and field in problems[0]


def test_options_that_are_not_an_object() -> None:
    options, problems = parse_options(["sessionID"])
    assert options == InitOptions()
    assert "must be an object" in problems[0]


@pytest.mark.parametrize(
    "config",
    [
        "allow everything",
        ["tools"],
        {"tools": ["grep"]},
        {"permission": 5},
        {"permission": {"bash": "sometimes"}},
        {"tools": {"grep": "off"}},
        {"tool_output": {"max_lines": -1}},
    ],
)
def test_an_invalid_config_fails_closed(config: Any) -> None:
    options, problems = parse_options({"config": config})
    assert options.config_error and "initializationOptions.config" in options.config_error
    assert problems == [options.config_error]
    for permission in FAIL_CLOSED_RULES:
        assert action(options.config, permission) == "ask"


def test_fail_closed_keeps_what_the_user_restricted() -> None:
    config = fail_closed_config(
        {
            "tools": {"grep": False, "glob": "no", "read": True},
            "permission": {
                "edit": "deny",
                "webfetch": "allow",
                "read": {"*.secret": "deny", "*.md": "whatever"},
                "bash": 12,
            },
        }
    )
    assert not config.is_enabled("grep")
    assert not config.is_enabled("glob")  # a value that is not true counts as off
    assert config.is_enabled("read")
    assert action(config, "edit") == "deny"  # the asks added after it cannot undo a deny
    assert action(config, "webfetch") == "ask"  # an allow is lowered to ask
    assert action(config, "bash") == "ask"
    assert action(config, "read", "a.secret") == "deny"
    assert action(config, "read", "notes.md") == "ask"  # an unreadable action asks
