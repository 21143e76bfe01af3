"""A built-in's arguments are checked by pydantic-core from the stored schema
(tools.arguments.model).

``tests/test_catalog.py`` fails when the store is stale; here the stored schemas are
revived and must check calls exactly as pydantic does when it describes the class now.
"""

from __future__ import annotations

import gc
import importlib
import math
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, get_args, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pydantic_core import ValidationError

from tools.arguments.model import (
    Arguments,
    AtLeast,
    _core_validator,
    _storable,
    _store,
    as_json,
    describe,
    json_schema_for,
    key_of,
    validator_for,
)
from tools.arguments.plain import plain_check
from tools.builtin import bash, edit, multiedit, read, todowrite, webfetch, write
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


def described_now(params: type) -> Any:
    """pydantic's validator for ``params``, described from its source now."""
    # pydantic reads the field docstrings with ast.parse, whose AST constructor in
    # CPython 3.11 can fail with "recursion depth mismatch" (a SystemError; see
    # python/cpython#106905). Here it did when earlier tests' garbage (asyncio transports)
    # was collected in the middle of the parse; collecting it first avoids that.
    gc.collect()
    return TypeAdapter(params).validate_python


def outcome(validate: Any, raw: Any) -> Any:
    try:
        return ("ok", as_json(validate(raw)))
    except ValidationError as error:
        return ("error", error.errors(include_url=False))


@pytest.mark.parametrize("params", list(SAMPLES), ids=lambda cls: cls.__name__)
def test_the_stored_validator_checks_as_pydantic_does(params: type) -> None:
    assert key_of(params) in _store()  # from the store, not described now
    fresh = described_now(params)
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


# --- plain calls, checked without pydantic-core (tools.arguments.plain) --------------------


def stored_class(key: str) -> type:
    module, _, name = key.partition(":")
    return getattr(importlib.import_module(module), name)


PLAIN = {
    stored_class(key): plain
    for key, stored in _store().items()
    if (plain := plain_check(stored_class(key), stored["core"])) is not None
}


def test_the_common_built_ins_have_a_plain_check() -> None:
    # A stored schema pydantic changes shape in would silently lose the plain path.
    expected = {read.ReadParams, bash.BashParams, edit.EditParams, write.WriteParams}
    assert expected <= set(PLAIN)


def same_values(one: Any, other: Any) -> bool:
    """Field by field, with the same types (True == 1 is not good enough here)."""
    pairs = [(getattr(one, f.name), getattr(other, f.name)) for f in fields(one)]
    return type(one) is type(other) and all(
        type(a) is type(b) and (a == b or (a != a and b != b)) for a, b in pairs
    )


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=4,
)
EDGES = st.sampled_from([None, True, False, -1, 0, 1, 0.5, math.nan, "", "3", [], {}])
BIG = st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 10**400])
OF_KIND: dict[Any, Any] = {
    str: st.text(max_size=3),
    int: st.integers(-3, 3) | st.integers() | BIG,
    float: st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.5])
    | st.floats()
    | st.integers(-3, 3)
    | BIG,
    bool: st.booleans(),
    type(None): st.none(),
}


def of_kind(hint: Any) -> Any:
    """Values of the field's own kinds (an ``int | None`` field: integers or None)."""
    return st.one_of(*(OF_KIND[kind] for kind in get_args(hint) or (hint,) if kind in OF_KIND))


@st.composite
def calls_of(draw: Any, params: type) -> dict[str, Any]:
    """A call of the right kinds, then at most one value (or an extra key) made odd: of
    another kind, an edge, or any JSON value. Most calls are then plain, and the odd one
    sits where the plain check and pydantic-core could part."""
    hints = get_type_hints(params)
    names = [f.name for f in fields(params)]
    required = [f.name for f in fields(params) if f.default is MISSING]
    raw: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {name: of_kind(hints[name]) for name in required},
            optional={name: of_kind(hints[name]) for name in names if name not in required},
        )
    )
    odd = draw(st.sampled_from([None, *names, "extra"]))
    if odd is not None:
        raw[odd] = draw(st.one_of(*OF_KIND.values(), EDGES, JSON_VALUES))
    return raw


@pytest.mark.parametrize("params", list(PLAIN), ids=lambda cls: cls.__name__)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_plain_check_answers_as_pydantic_core_or_not_at_all(params: type, data: Any) -> None:
    raw = data.draw(calls_of(params) | JSON_VALUES, label="raw")
    found = PLAIN[params](raw)
    if found is None:
        return  # pydantic-core's to answer, as before
    core = _core_validator(params, _store()[key_of(params)])
    assert same_values(found, core(raw)), raw


@pytest.mark.parametrize(
    ("params", "raw"),
    [
        (read.ReadParams, {"filePath": "a.txt", "offset": 0, "limit": 5}),
        (bash.BashParams, {"command": "true", "timeout": 5, "description": None}),
        (edit.EditParams, {"filePath": "f", "oldString": "a", "newString": "b"}),
    ],
)
def test_the_usual_calls_are_plain(params: type, raw: dict[str, Any]) -> None:
    found = PLAIN[params](raw)
    assert found is not None
    assert same_values(found, _core_validator(params, _store()[key_of(params)])(raw))
