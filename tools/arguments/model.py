"""A built-in tool's arguments: a dataclass that pydantic describes once, ahead of time.

A built-in declares its arguments as a frozen, keyword-only dataclass subclassing
``Arguments``. The docstring under each field is its description, and ``AtLeast`` /
``Above`` / ``NonEmpty`` constrain it::

    @dataclass(frozen=True, kw_only=True)
    class ReadParams(Arguments):
        filePath: str
        \"\"\"Path of the file or directory to read\"\"\"
        limit: Annotated[int, AtLeast(1)] | None = None
        \"\"\"The maximum number of lines to read\"\"\"

pydantic turns such a class into two things:

- the JSON Schema the model sees;
- the pydantic-core schema that checks a call.

``scripts/gen_catalog.py`` stores both in ``tools/builtin/arguments.json``. A built-in is
therefore checked by pydantic-core from the stored schema, and pydantic itself is never
imported to run one; that import is most of a sidecar's first call. Errors are still
pydantic's own (``pydantic_core.ValidationError``), with the same messages. A call
whose values all have their fields' plain types already is answered before that, without
pydantic-core (``tools.arguments.plain``), with the same result.

Custom tools keep pydantic models (``tools.custom.api``): ``validator_for`` and
``json_schema_for`` take either kind.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from tools.arguments.plain import plain_check

STORE = Path(__file__).parent.parent / "builtin" / "arguments.json"
# The default factories a stored schema may name (a field's ``= field(default_factory=...)``).
_FACTORIES: dict[str, Callable[[], Any]] = {"list": list, "dict": dict}
# pydantic's refs end in the class's id(), which changes from run to run.
_REF_ID = re.compile(r":\d+$")

Validate = Callable[[Any], Any]


class Arguments:
    """Base of a built-in's arguments dataclass (see the module docstring)."""

    # Read by pydantic when it builds the schemas: field descriptions come from docstrings.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"use_attribute_docstrings": True}


@dataclasses.dataclass(frozen=True)
class _Bound:
    """A pydantic-core constraint (``ge``, ``gt``, ``min_length``) put on the schema of
    the type it annotates; the JSON Schema shows it as ``minimum``, ``minItems``..."""

    key: str
    value: int

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        schema = handler(source)
        schema[self.key] = self.value
        return schema


def AtLeast(value: int) -> Any:
    return _Bound("ge", value)


def Above(value: int) -> Any:
    return _Bound("gt", value)


def NonEmpty() -> Any:
    return _Bound("min_length", 1)


def as_json(value: Any) -> Any:
    """Arguments as plain JSON values, without the fields that are None (what pydantic's
    ``model_dump(exclude_none=True)`` gives for a model)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        return {name: as_json(item) for name, item in fields if item is not None}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


def key_of(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def is_arguments(params: type) -> bool:
    return dataclasses.is_dataclass(params) and issubclass(params, Arguments)


def validator_for(params: type) -> Validate:
    """What checks a call's raw arguments and returns them as ``params``.

    A pydantic model validates itself. An ``Arguments`` dataclass is checked by a
    pydantic-core validator built from the stored schema; a class the store does not
    know yet (a tool being written) is described by pydantic now.
    """
    if not is_arguments(params):
        validate: Validate = params.model_validate  # type: ignore[attr-defined]
        return validate
    return _stored_validator(params)


@cache
def _stored_validator(params: type) -> Validate:
    stored = _store().get(key_of(params))
    if stored is None:
        return _core_validator(params, stored)
    # A plain call is answered at once; any other is pydantic-core's, imported then.
    plain = plain_check(params, stored["core"], _on_first_use(params, stored))
    return plain if plain is not None else _core_validator(params, stored)


def _on_first_use(params: type, stored: dict[str, Any]) -> Validate:
    """pydantic-core's validator of ``params``, built when it is first called."""
    built: Validate | None = None

    def validate(raw: Any) -> Any:
        nonlocal built
        if built is None:
            built = _core_validator(params, stored)
        return built(raw)

    return validate


def _core_validator(params: type, stored: dict[str, Any] | None) -> Validate:
    from pydantic_core import SchemaValidator

    core = _revive(stored["core"]) if stored else describe(params)["core_live"]
    return SchemaValidator(core).validate_python


def json_schema_for(params: type) -> dict[str, Any]:
    """The JSON Schema the model sees for ``params`` (``tools.arguments.schema``'s form)."""
    if is_arguments(params):
        stored = _store().get(key_of(params))
        schema: dict[str, Any] = describe(params)["schema"] if stored is None else stored["schema"]
        return copy.deepcopy(schema)  # the caller may change its copy
    from tools.arguments.schema import model_schema

    return model_schema(params)


@cache
def _store() -> dict[str, dict[str, Any]]:
    try:
        entries: dict[str, dict[str, Any]] = json.loads(STORE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return entries


# --- ahead of time (scripts/gen_catalog.py), with pydantic ------------------------------


def describe(params: type) -> dict[str, Any]:
    """pydantic's schemas for ``params``: ``schema`` (JSON Schema, as the model sees it),
    ``core`` (storable) and ``core_live`` (the same with the classes in it)."""
    from pydantic import TypeAdapter

    from tools.arguments.schema import arguments_schema

    adapter: TypeAdapter[Any] = TypeAdapter(params)
    live = adapter.core_schema
    return {
        "schema": arguments_schema(adapter.json_schema(by_alias=True, mode="validation")),
        "core": _storable(live),
        "core_live": live,
    }


def _storable(node: Any, where: str = "") -> Any:
    """The core schema as JSON: classes and factories by name, no pydantic metadata."""
    if isinstance(node, list):
        return [_storable(item, where) for item in node]
    if not isinstance(node, dict):
        if callable(node):
            raise ValueError(f"{where}: a function ({node!r}) cannot be stored")
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "metadata":  # JSON Schema hints only, already in "schema"
            continue
        if key == "cls":
            out[key] = {"$class": key_of(value)}
        elif key == "default_factory":
            name = getattr(value, "__name__", "")
            if _FACTORIES.get(name) is not value:
                raise ValueError(f"{where}: default_factory {value!r} cannot be stored")
            out[key] = {"$factory": name}
        elif key in ("ref", "schema_ref") and isinstance(value, str):
            out[key] = _REF_ID.sub("", value)
        else:
            out[key] = _storable(value, f"{where}.{key}")
    return out


def _revive(node: Any) -> Any:
    """A stored core schema with its classes and factories back in place."""
    if isinstance(node, list):
        return [_revive(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$class" in node:
        module, _, qualname = node["$class"].partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        return found
    if "$factory" in node:
        return _FACTORIES[node["$factory"]]
    return {key: _revive(value) for key, value in node.items()}
