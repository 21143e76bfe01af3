"""A built-in's arguments are checked by pydantic-core from the stored schema (tools.arguments).

``tests/test_catalog.py`` fails when the store is stale; here the stored schemas are
revived and must check calls exactly as pydantic does when it describes the class now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import TypeAdapter
from pydantic_core import ValidationError

from tools.arguments import (
    Arguments,
    AtLeast,
    _storable,
    _store,
    as_json,
    describe,
    json_schema_for,
    key_of,
    validator_for,
)
from tools.builtin import bash, multiedit, read, todowrite, webfetch
from tools.host import ToolHost

SAMPLES: dict[type, list[Any]] = {
    read.ReadParams: [
        {"filePath": "a.txt"},
        {"filePath": "a.txt", "offset": "3", "limit": 2.0},
        {"filePath": "a.txt", "offset": -1},
        {"filePath": 5, "limit": 0},
        {},
        [],
    ],
    multiedit.MultiEditParams: [
        {"filePath": "f", "edits": [{"oldString": "a", "newString": "b"}]},
        {"filePath": "f", "edits": []},
        {"filePath": "f", "edits": [1, {"oldString": "a"}]},
    ],
    todowrite.TodoWriteParams: [
        {"todos": [{"content": "x", "status": "pending", "priority": "high"}]},
        {"todos": [{"content": "x", "status": "started", "priority": "urgent", "id": 3}]},
    ],
    bash.BashParams: [
        {"command": "true", "timeout": 5},
        {"command": "true", "timeout": math.nan},
        {"command": "true", "timeout": math.inf},
    ],
    webfetch.WebFetchParams: [
        {"url": "https://x", "format": "html", "timeout": 0},
        {"url": "https://x", "format": "pdf"},
    ],
}


def outcome(validate: Any, raw: Any) -> Any:
    try:
        return ("ok", as_json(validate(raw)))
    except ValidationError as error:
        return ("error", error.errors(include_url=False))


@pytest.mark.parametrize("params", list(SAMPLES), ids=lambda cls: cls.__name__)
def test_the_stored_validator_checks_as_pydantic_does(params: type) -> None:
    assert key_of(params) in _store()  # from the store, not described now
    fresh = TypeAdapter(params).validate_python
    for raw in SAMPLES[params]:
        assert outcome(validator_for(params), raw) == outcome(fresh, raw), raw


def test_nan_and_infinity_are_not_a_timeout(tmp_path: Path) -> None:
    host = ToolHost(tmp_path)
    for value in (math.nan, math.inf):
        result = host_run(host, "bash", {"command": "true", "timeout": value})
        assert result.is_error and result.metadata["error"] == "invalid_arguments"
        assert "timeout: input should be a finite number" in result.output


def host_run(host: ToolHost, tool: str, args: dict[str, Any]) -> Any:
    import asyncio

    return asyncio.run(host.execute(tool, args))


def test_descriptions_state_the_defaults_the_code_uses() -> None:
    # A docstring cannot be an f-string, so the number is written out: keep it true.
    limit = read.tool.schema["properties"]["limit"]["description"]
    timeout = bash.tool.schema["properties"]["timeout"]["description"]
    assert f"(default {read.DEFAULT_LIMIT})" in limit
    assert f"(default {bash.DEFAULT_TIMEOUT_MS})" in timeout


def test_a_class_the_store_does_not_know_is_described_by_pydantic_now() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Fresh(Arguments):
        name: str
        """Who to greet, as
        they like to be called"""
        times: Annotated[int, AtLeast(1)] = 1
        """How often"""
        tags: list[str] = field(default_factory=list)
        """Labels"""

    assert key_of(Fresh) not in _store()
    schema = json_schema_for(Fresh)
    assert schema["properties"]["name"]["description"] == "Who to greet, as they like to be called"
    assert schema["properties"]["times"] == {
        "default": 1,
        "description": "How often",
        "minimum": 1,
        "type": "integer",
    }
    assert schema["required"] == ["name"]
    checked = validator_for(Fresh)({"name": "Ada", "times": "2"})
    assert (checked.name, checked.times, checked.tags) == ("Ada", 2, [])
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        validator_for(Fresh)({"name": "Ada", "times": 0})


def test_a_schema_that_holds_a_function_cannot_be_stored() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Made(Arguments):
        items: list[str] = field(default_factory=lambda: ["x"])
        """Items"""

    with pytest.raises(ValueError, match=r"default_factory .* cannot be stored"):
        _storable(describe(Made)["core_live"])


def test_arguments_as_json_leave_out_what_is_none() -> None:
    todo = todowrite.TodoItem(content="x", status="pending", priority="low")
    params = todowrite.TodoWriteParams(todos=[todo])
    assert as_json(params) == {"todos": [{"content": "x", "status": "pending", "priority": "low"}]}
