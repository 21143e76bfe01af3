"""How each ACP agent is told to leave its own file and shell tools off.

Found in the adapters' own source (the versions the tests run):

- OpenCode (``opencode acp``): its config's ``tools`` map removes a built-in from what
  the model is offered; ``OPENCODE_CONFIG_CONTENT`` is a config layer over the user's.
- Claude Code (``claude-agent-acp``, ``claude-code-acp``): ``session/new``'s
  ``_meta.claudeCode.options`` are the Agent SDK's options; ``tools`` lists the
  built-ins offered (``[]``: none), older adapters read ``_meta.disableBuiltInTools``.
  ``ENABLE_TOOL_SEARCH=false`` offers MCP tools up front instead of behind ToolSearch.
- Codex (``codex-acp``): ``-c key=value`` overrides its config; the ``shell_tool`` and
  ``unified_exec`` features are its shell, ``apply_patch_freeform`` and
  ``include_apply_patch_tool`` its editing tool.
- Gemini CLI (``gemini --acp``, formerly ``--experimental-acp``): ``tools.exclude`` in its
  settings; the system settings file (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) overrides the
  user's. Not proven: in a trial with 0.61.0 the user's ``tools.exclude`` removed the
  tools it named but this system file did not, so Gemini's own tools must be taken as on.

Anything else is run as given: its own tools stay, and the docs say so.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OPENCODE_OFF: tuple[str, ...] = (
    "bash",
    "edit",
    "write",
    "read",
    "glob",
    "grep",
    "list",
    "patch",
    "multiedit",
)
OPENCODE_OFF += ("apply_patch",)
CLAUDE_OFF: tuple[str, ...] = ("Bash", "BashOutput", "KillShell", "Edit", "MultiEdit", "Write")
CLAUDE_OFF += ("NotebookEdit", "Read", "Glob", "Grep", "LS")
CODEX_OFF = (
    "features.shell_tool=false",
    "features.unified_exec=false",
    "features.apply_patch_freeform=false",
    "include_apply_patch_tool=false",
)
GEMINI_OFF = (
    "run_shell_command",
    "write_file",
    "replace",
    "read_file",
    "read_many_files",
    "glob",
    "search_file_content",
    "grep_search",
    "list_directory",
)


@dataclass
class Agent:
    """An agent's command line, environment and session options, its tools turned off."""

    kind: str  # "opencode", "claude", "codex", "gemini" or "other"
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    own_tools_off: bool = True
    cleanup: list[Path] = field(default_factory=list)

    def session_meta(self, params: dict[str, Any]) -> None:
        """Adjust ``session/new`` / ``session/load`` params for this agent (in place)."""
        if self.kind != "claude" or not self.own_tools_off:
            return
        meta = params.setdefault("_meta", {})
        if not isinstance(meta, dict):
            meta = params["_meta"] = {}
        meta["disableBuiltInTools"] = True  # claude-code-acp before 0.2x
        claude = meta.setdefault("claudeCode", {})
        options = claude.setdefault("options", {}) if isinstance(claude, dict) else None
        if isinstance(options, dict):
            offered = options.get("tools")
            kept = [t for t in offered if t not in CLAUDE_OFF] if isinstance(offered, list) else []
            options["tools"] = kept
            denied = options.get("disallowedTools")
            denied = list(denied) if isinstance(denied, list) else []
            options["disallowedTools"] = denied + [t for t in CLAUDE_OFF if t not in denied]


def kind_of(argv: list[str]) -> str:
    words = [Path(word).name for word in argv[:3]]
    joined = " ".join(words)
    if "claude-agent-acp" in joined or "claude-code-acp" in joined:
        return "claude"
    if "codex-acp" in joined:
        return "codex"
    if words and words[0].startswith("opencode"):
        return "opencode"
    if "gemini" in joined:
        return "gemini"
    return "other"


def prepare(argv: list[str], *, own_tools_off: bool = True) -> Agent:
    """The agent to start for ``argv``, told to leave its own tools off where it can be."""
    kind = kind_of(argv)
    agent = Agent(kind, list(argv), own_tools_off=own_tools_off)
    if not own_tools_off:
        return agent
    if kind == "opencode":
        layer = _json_env("OPENCODE_CONFIG_CONTENT")
        tools = layer.get("tools")
        kept = tools if isinstance(tools, dict) else {}
        layer["tools"] = {**kept, **{name: False for name in OPENCODE_OFF}}
        agent.env["OPENCODE_CONFIG_CONTENT"] = json.dumps(layer)
    elif kind == "claude":
        agent.env["ENABLE_TOOL_SEARCH"] = "false"
    elif kind == "codex":
        for override in CODEX_OFF:
            agent.argv += ["-c", override]
    elif kind == "gemini":
        agent.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(_gemini_settings(agent))
    return agent


def _json_env(name: str) -> dict[str, Any]:
    try:
        value = json.loads(os.environ.get(name) or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _gemini_settings(agent: Agent) -> Path:
    """A system settings file: the one in force (if any) plus the excluded tools."""
    settings: dict[str, Any] = {}
    existing = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    if existing:
        try:
            loaded = json.loads(Path(existing).read_text(encoding="utf-8"))
            settings = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            settings = {}
    tools = settings.setdefault("tools", {})
    if isinstance(tools, dict):
        found = tools.get("exclude")
        excluded: list[Any] = found if isinstance(found, list) else []
        tools["exclude"] = list(excluded) + [t for t in GEMINI_OFF if t not in excluded]
    handle, name = tempfile.mkstemp(prefix="toolhost-acp-gemini-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(settings, out)
    agent.cleanup.append(Path(name))
    return Path(name)
