"""Prompt titles in plain words, for asks whose tool gave none ("Read .env")."""

from __future__ import annotations

from typing import Any

TITLE_COMMAND_CHARS = 80


def plain_title(
    tool: str, permission: str, pattern_list: list[str], metadata: dict[str, Any]
) -> str:
    """A prompt title in plain words, from the permission, patterns and metadata."""
    patterns = ", ".join(pattern_list)
    match permission:
        case "read":
            return f"Read {patterns}"
        case "edit":
            return f"Edit {patterns}"
        case "bash":
            return f"Run `{short_command(str(metadata.get('command') or patterns))}`"
        case "webfetch":
            return f"Fetch {metadata.get('url') or patterns}"
        case "external_directory":
            return f"Access files outside the project: {patterns}"
        case "glob":
            return f"Find files matching {patterns}"
        case "grep":
            return f"Search file contents for {patterns}"
        case "list":
            return f"List the folder {patterns}"
        case "skill":
            return f"Load the skill {patterns}"
        case "todowrite":
            return "Update the todo list"
        case "todoread":
            return "Read the todo list"
        case "task":
            return f"Start a sub-agent: {metadata.get('description') or patterns}"
    return f"Allow {tool} ({permission}): {patterns}"


def short_command(command: str) -> str:
    """A command's first line, cut to fit a prompt title (the prompt's metadata has all)."""
    lines = command.strip().splitlines() or [""]
    text = lines[0]
    if len(text) > TITLE_COMMAND_CHARS:
        text = text[: TITLE_COMMAND_CHARS - 1].rstrip() + "…"
    elif len(lines) > 1:
        text += " …"
    return text
