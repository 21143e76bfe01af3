"""The plain calls of a built-in, checked without pydantic-core.

Most calls of most built-ins are a few strings and integers (``read``: a path, maybe an
offset and a limit). For a stored schema made only of such fields, ``plain_check``
builds a check that takes a call exactly when every value already has its field's type
(no coercion: ``"3"`` for an integer is not taken, save an integer for a float, as
pydantic-core does) and meets its bounds, and answers it with the dataclass
pydantic-core would build. Anything else goes on to pydantic-core, which checks it as
before, with its own errors. That keeps pydantic-core's import (10-12 ms of a sidecar's
first call on the benchmark VM) out of the calls that never need it;
``tests/tools/test_arguments.py`` holds the two to the same answers.

Only schema keys listed here are understood; a field with any other (an alias, a
pattern, a length) leaves the whole class to pydantic-core.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

Convert = Callable[[Any], Any]
PlainCheck = Callable[[Any], Any]

_MISSING = object()
_REFUSED = object()
_EXACT_FLOAT = 2**53
_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "ge": operator.ge,
    "gt": operator.gt,
    "le": operator.le,
    "lt": operator.lt,
}
# The schema keys understood at each level; any other leaves the class to pydantic-core.
_DATACLASS_KEYS = frozenset(
    ("type", "cls", "fields", "schema", "post_init", "frozen", "slots", "config", "ref")
)
_ARGS_KEYS = {"type", "dataclass_name", "fields", "computed_fields", "collect_init_only"}
_FIELD_KEYS = {"type", "name", "schema", "init", "kw_only"}


def plain_check(
    cls: type, core: dict[str, Any], otherwise: PlainCheck = lambda raw: None
) -> PlainCheck | None:
    """A check of ``cls``'s calls that answers the plain ones and hands any other to
    ``otherwise`` (by default: None), or None when its stored core schema ``core`` has
    anything but plain fields."""
    if set(core) - _DATACLASS_KEYS or core.get("type") != "dataclass":
        return None
    if core.get("post_init") or core.get("slots"):  # no __post_init__ to run, a __dict__ to set
        return None
    config = core.get("config") or {}
    if set(config) - {"title", "allow_inf_nan"}:
        return None
    finite = config.get("allow_inf_nan") is False  # NaN and infinity are refused
    args = core.get("schema") or {}
    if set(args) - _ARGS_KEYS or args.get("type") != "dataclass-args":
        return None
    if args.get("computed_fields") or args.get("collect_init_only"):
        return None
    fields: list[tuple[str, Convert, Any]] = []
    for spec in args.get("fields") or []:
        if set(spec) - _FIELD_KEYS or spec.get("type") != "dataclass-field":
            return None
        if not spec.get("init", True):
            return None
        found = _field(spec.get("schema") or {}, finite)
        if found is None:
            return None
        fields.append((spec["name"], *found))
    return _checker(cls, fields, otherwise)


def _checker(
    cls: type, fields: list[tuple[str, Convert, Any]], otherwise: PlainCheck
) -> PlainCheck:
    new, set_attribute = object.__new__, object.__setattr__

    def check(raw: Any) -> Any:
        if type(raw) is not dict:
            return otherwise(raw)
        values = {}
        # Keys the dataclass does not declare are ignored, as pydantic-core ignores them.
        for name, convert, default in fields:
            if name in raw:
                value = convert(raw[name])
                if value is _REFUSED:
                    return otherwise(raw)
            elif default is _MISSING:
                return otherwise(raw)  # which says what is missing
            else:
                value = default
            values[name] = value
        # As pydantic-core builds a dataclass: the fields become the instance's __dict__
        # at once, with no __init__ (which, frozen, sets each through object.__setattr__).
        instance: Any = new(cls)
        set_attribute(instance, "__dict__", values)
        return instance

    return check


def _field(schema: dict[str, Any], finite: bool) -> tuple[Convert, Any] | None:
    """(the field's conversion, its default or ``_MISSING``), or None: not plain."""
    if schema.get("type") == "default":
        if set(schema) - {"type", "schema", "default"}:
            return None
        default = schema.get("default")
        if default is not None and type(default) not in (str, int, float, bool):
            return None  # only immutable defaults can be shared between calls
        convert = _conversion(schema.get("schema") or {}, finite)
        return None if convert is None else (convert, default)
    convert = _conversion(schema, finite)
    return None if convert is None else (convert, _MISSING)


def _conversion(schema: dict[str, Any], finite: bool) -> Convert | None:
    """What a value of this schema becomes (``_REFUSED``: leave it to pydantic-core), or
    None when the schema is not a plain one."""
    kind, keys = schema.get("type"), set(schema) - {"type"}
    if kind == "nullable" and keys <= {"schema"}:
        inner = _conversion(schema.get("schema") or {}, finite)
        if inner is None:
            return None
        return lambda value: None if value is None else inner(value)
    if kind == "str" and not keys:
        return lambda value: value if type(value) is str else _REFUSED
    if kind == "bool" and not keys:
        return lambda value: value if type(value) is bool else _REFUSED
    if kind == "float" and not keys:
        return _as_finite_float if finite else _as_float
    if kind == "int" and keys <= set(_BOUNDS):
        bounds = [(_BOUNDS[key], schema[key]) for key in _BOUNDS if key in schema]
        if any(type(limit) is not int for _, limit in bounds):
            return None

        def bounded(value: Any) -> Any:
            if type(value) is not int:
                return _REFUSED
            for within, limit in bounds:
                if not within(value, limit):
                    return _REFUSED
            return value

        return bounded
    return None


def _as_finite_float(value: Any) -> Any:
    value = _as_float(value)
    return value if value is _REFUSED or math.isfinite(value) else _REFUSED


def _as_float(value: Any) -> Any:
    # pydantic-core turns an integer into a float; one past 2**53 would lose digits, and
    # such an odd value is left to it.
    if type(value) is float:
        return value
    if type(value) is int and -_EXACT_FLOAT <= value <= _EXACT_FLOAT:
        return float(value)
    return _REFUSED
