"""What ``toolhost setup`` writes for each agent, and where.

Each agent's switches, from its own docs and source (the versions the tests run):

- Claude Code: an MCP server of user scope lives in ``~/.claude.json``'s ``mcpServers``
  (project scope: the folder's ``.mcp.json``); ``settings.json``'s ``permissions.deny``
  with a bare tool name takes that built-in away from the model, and its ``env`` is set
  for the session: ``ENABLE_TOOL_SEARCH=false`` offers MCP tools up front instead of
  behind ToolSearch, and ``MCP_CONNECTION_NONBLOCKING=false`` has the first turn wait
  for them (2.1.332 otherwise starts it while toolhost is still connecting, and offers
  ``WaitForMcpServers`` instead). ``CLAUDE_CONFIG_DIR`` moves both files.
- Codex: ``$CODEX_HOME/config.toml`` (``~/.codex``; project: ``.codex/config.toml``, read
  in trusted projects only): ``[mcp_servers.<name>]`` and the features that are its
  shell (``shell_tool``, ``unified_exec``) and its freeform ``apply_patch``
  (``apply_patch_freeform``). Codex 0.171 refuses ``include_apply_patch_tool`` under
  ``--strict-config`` (codex-acp's older core still reads it), so setup leaves it out.
  ``tool_timeout_sec`` is raised (``LONG_CALL_SECONDS``); so is Gemini CLI's ``timeout``.
- OpenCode: ``opencode.json``'s ``mcp`` entry, and its ``tools`` map turning built-ins off.
  toolhost reads OpenCode's config files as its own, so a ``tools`` map there would turn
  toolhost's own tools of the same names off too: the map goes into
  ``~/.opencode/opencode.json``, a directory OpenCode reads and toolhost does not. A
  project has no such file, so ``--project`` leaves OpenCode's own tools on and says so.
- Gemini CLI: ``~/.gemini/settings.json`` (project: ``.gemini/settings.json``):
  ``mcpServers`` and ``tools.exclude`` (``excludeTools`` in the older flat layout; 0.61
  warns that it moves to its policy engine by 1.0). An exclusion also removes an MCP
  tool of that bare name, so Gemini's own ``glob`` stays (it only reads the disk).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from server.acp.agents import CLAUDE_OFF, CODEX_OFF, GEMINI_OFF, OPENCODE_OFF
from server.setup.config_file import Document

AGENTS = ("claude", "codex", "opencode", "gemini")
# Claude Code 2.1.332 warns of a deny rule naming a tool it no longer has.
CLAUDE_CODE_OFF = tuple(name for name in CLAUDE_OFF if name not in ("MultiEdit", "LS"))
# Gemini CLI's exclusions match an MCP server's tools by their own names too: its `glob`
# would take toolhost's `glob` with it.
GEMINI_CLI_OFF = tuple(name for name in GEMINI_OFF if name != "glob")
Change = Callable[[Document], None]
# Codex (`tool_timeout_sec`, 300 s by default in 0.171) and Gemini CLI (`timeout`, 600 s in
# 0.61) cut a tool call at a hard limit that progress notifications do not extend, so a
# test suite or a build run through toolhost's bash would be cut halfway. bash has a
# timeout of its own (the model's, 2 minutes unless it asks for more): toolhost's limit
# there is an hour. (OpenCode and Claude Code restart their timer on progress, which
# toolhost sends while a call runs: nothing to set.)
LONG_CALL_SECONDS = 3600


@dataclass
class Target:
    """One file of an agent's config and what setup changes in it."""

    path: Path
    kind: str  # "json" or "toml"
    changes: list[Change]


@dataclass
class Plan:
    agent: str
    targets: list[Target]
    notes: list[str] = field(default_factory=list)


def plan(agent: str, toolhost: list[str], project: Path | None) -> Plan:
    """The files ``agent``'s setup touches: the user's (``project`` None) or the folder's."""
    return {"claude": _claude, "codex": _codex, "opencode": _opencode, "gemini": _gemini}[agent](
        toolhost, project
    )


def _home() -> Path:
    return Path.home()


def _claude(toolhost: list[str], project: Path | None) -> Plan:
    server = {"type": "stdio", "command": toolhost[0], "args": [*toolhost[1:], "mcp"], "env": {}}
    explicit = os.environ.get("CLAUDE_CONFIG_DIR")
    config_dir = Path(explicit).expanduser() if explicit else _home() / ".claude"
    if project is None:
        servers = (config_dir if explicit else _home()) / ".claude.json"
        settings = config_dir / "settings.json"
    else:
        servers, settings = project / ".mcp.json", project / ".claude" / "settings.json"

    def deny(doc: Document) -> None:
        doc.extend(["permissions", "deny"], CLAUDE_CODE_OFF)
        doc.put(["env", "ENABLE_TOOL_SEARCH"], "false")
        doc.put(["env", "MCP_CONNECTION_NONBLOCKING"], "false")

    targets = [
        Target(servers, "json", [_put(["mcpServers", "toolhost"], server)]),
        Target(settings, "json", [deny]),
    ]
    notes = []
    if project is not None:
        notes.append("Claude Code asks each person to approve .mcp.json on their first run.")
    return Plan("claude", targets, notes)


def _codex(toolhost: list[str], project: Path | None) -> Plan:
    home = Path(os.environ.get("CODEX_HOME") or _home() / ".codex")
    path = (project / ".codex" if project else home) / "config.toml"

    def change(doc: Document) -> None:
        for key, value in (("command", toolhost[0]), ("args", [*toolhost[1:], "mcp"])):
            doc.put(["mcp_servers", "toolhost", key], value)
        doc.put(["mcp_servers", "toolhost", "required"], True)
        doc.put(["mcp_servers", "toolhost", "tool_timeout_sec"], LONG_CALL_SECONDS)
        for override in CODEX_OFF:
            dotted, _, value = override.partition("=")
            if dotted.startswith("features."):  # Codex 0.171 knows no include_apply_patch_tool
                doc.put(dotted.split("."), value == "true")

    notes = ["Codex reads .codex/config.toml only in a project you trust."] if project else []
    return Plan("codex", [Target(path, "toml", [change])], notes)


def _opencode(toolhost: list[str], project: Path | None) -> Plan:
    from tools.config.dirs import global_config_dir

    folder = project if project is not None else global_config_dir()
    path = _existing(folder, ("opencode.jsonc", "opencode.json"))
    server = {"type": "local", "command": [*toolhost, "mcp"], "enabled": True}
    schema = _put(["$schema"], "https://opencode.ai/config.json", only_new=True)
    targets = [Target(path, "json", [schema, _put(["mcp", "toolhost"], server)])]
    notes = []
    if project is None:
        off = {name: False for name in OPENCODE_OFF}
        own = _existing(_home() / ".opencode", ("opencode.jsonc", "opencode.json"))
        targets.append(Target(own, "json", [schema, _put(["tools"], off)]))
    else:
        notes.append(
            "OpenCode's own tools stay on for this folder: toolhost reads the project's "
            "opencode.json too, so a `tools` map there would turn toolhost's tools off as "
            "well. `toolhost setup opencode` (without --project) turns them off for you."
        )
        notes.append("Run `toolhost trust` here so toolhost serves the folder's own config.")
    return Plan("opencode", targets, notes)


def _gemini(toolhost: list[str], project: Path | None) -> Plan:
    path = (project if project is not None else _home()) / ".gemini" / "settings.json"
    server = {
        "command": toolhost[0],
        "args": [*toolhost[1:], "mcp"],
        "timeout": LONG_CALL_SECONDS * 1000,
    }

    def exclude(doc: Document) -> None:
        flat = "excludeTools" in doc.data  # the settings layout before Gemini CLI 0.3
        doc.extend(["excludeTools"] if flat else ["tools", "exclude"], GEMINI_CLI_OFF)

    changes = [_put(["mcpServers", "toolhost"], server), exclude]
    return Plan("gemini", [Target(path, "json", changes)])


def _put(keys: list[str], value: object, *, only_new: bool = False) -> Change:
    def change(doc: Document) -> None:
        if not (only_new and doc.exists):
            doc.put(keys, value)

    return change


def _existing(folder: Path, names: tuple[str, ...]) -> Path:
    return next((folder / n for n in names if (folder / n).exists()), folder / names[-1])
