"""OpenCode's built-in rules: the defaults every agent starts from, and each built-in
agent's own (reference §3.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.permission.rules import Ruleset, rules_from_config


def default_rules(tool_output_dir: Path) -> Ruleset:
    """OpenCode's built-in defaults (reference §3.3)."""
    return rules_from_config(
        {
            "*": "allow",
            "doom_loop": "ask",
            "external_directory": {"*": "ask", f"{tool_output_dir.as_posix()}/*": "allow"},
            "question": "deny",
            "plan_enter": "deny",
            "plan_exit": "deny",
            "read": {"*": "allow", "*.env": "ask", "*.env.*": "ask", "*.env.example": "allow"},
        }
    )


_READ_ONLY_TOOLS = ("grep", "glob", "list", "bash", "webfetch", "websearch", "codesearch", "read")

AGENT_RULES: dict[str, dict[str, Any]] = {
    "build": {"question": "allow", "plan_enter": "allow"},
    "plan": {
        "question": "allow",
        "task": {"general": "deny"},
        "edit": {"*": "deny", ".opencode/plans/*.md": "allow"},
    },
    "explore": {"*": "deny", **dict.fromkeys(_READ_ONLY_TOOLS, "allow")},
    "general": {"todowrite": "deny", "todoread": "deny"},
}
