"""What the model sees: every built-in tool's JSON Schema, pinned.

A change to a parameter model shows up here as a snapshot diff, so a reviewer sees
the model-visible effect.  Regenerate with ``UPDATE_SNAPSHOTS=1 pytest tests/test_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tools.builtin.lazy import builtin_tools, invalid_tool

SNAPSHOT = Path(__file__).parent / "snapshots" / "schemas.json"
TOOLS = [*builtin_tools(), invalid_tool()]


def current() -> dict[str, Any]:
    return {tool.id: tool.schema for tool in sorted(TOOLS, key=lambda t: t.id)}


def test_schemas_match_the_snapshot() -> None:
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current(), indent=2, ensure_ascii=False) + "\n")
    assert json.loads(SNAPSHOT.read_text()) == current()


def _walk(node: Any):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.id)
def test_schema_is_self_contained_and_described(tool) -> None:
    schema = tool.schema
    assert schema["type"] == "object"
    assert isinstance(schema["required"], list)
    for node in _walk(schema):
        assert "$ref" not in node and "$defs" not in node
        assert not isinstance(node.get("title"), str)
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{tool.id}.{name} has no description"
    assert tool.description and not tool.description.startswith(" ")


OPENCODE_WIRE_NAMES = {
    "read": {"filePath", "offset", "limit"},
    "write": {"filePath", "content"},
    "edit": {"filePath", "oldString", "newString", "replaceAll"},
    "multiedit": {"filePath", "edits"},
    "glob": {"pattern", "path"},
    "grep": {"pattern", "path", "include"},
    "list": {"path", "ignore"},
}


@pytest.mark.parametrize("tool_id", sorted(OPENCODE_WIRE_NAMES))
def test_parameter_names_are_opencodes(tool_id: str) -> None:
    (tool,) = [t for t in TOOLS if t.id == tool_id]
    assert set(tool.schema["properties"]) == OPENCODE_WIRE_NAMES[tool_id]
