"""The JSON Schema a model sees: self-contained, described, no pydantic noise.

pydantic emits ``title`` everywhere and puts nested models under ``$defs``; many
providers reject ``$ref``.  We inline every reference and drop titles once, when a
tool is defined (a built-in's, ahead of time: ``tools.arguments.model``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

_DROP = {"title"}


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _from_pydantic(model.model_json_schema(by_alias=True, mode="validation"))


def arguments_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """pydantic's JSON Schema of an ``Arguments`` dataclass, as the model sees it.

    Its descriptions are field docstrings, wrapped to fit the source: each becomes
    one line again, as a ``Field(description=...)`` would have been written.
    """
    return _from_pydantic(_unwrapped(raw))


def _from_pydantic(raw: dict[str, Any]) -> dict[str, Any]:
    defs = raw.pop("$defs", {})
    return _as_arguments(_inline(raw, defs))


def _unwrapped(node: Any) -> Any:
    if isinstance(node, list):
        return [_unwrapped(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: " ".join(value.split())
        if key == "description" and isinstance(value, str)
        else _unwrapped(value)
        for key, value in node.items()
    }


def _as_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's arguments: always an object, with properties, required and no extras."""
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema["required"] = schema.get("required", [])
    schema.setdefault("additionalProperties", False)
    return schema


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        merged = copy.deepcopy(defs[name])
        # Siblings of $ref (e.g. a field's description) win over the target's.
        merged.update({k: v for k, v in node.items() if k != "$ref"})
        return _inline(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP and not isinstance(value, dict):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _inline(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _inline(value, defs)
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    # pydantic writes Optional[X] as anyOf [X, null]; providers prefer the plain type
    # (the field is already optional by not being required).
    any_of = out.get("anyOf")
    if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
        (only,) = [s for s in any_of if s != {"type": "null"}]
        del out["anyOf"]
        out = {**only, **out}
        if out.get("default", 0) is None:
            del out["default"]
    return out


def normalise_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema from elsewhere (zod, a plugin) made self-contained like ``model_schema``.

    Raises ``ValueError`` for what cannot be inlined: a recursive schema, or a
    ``$ref`` that does not point into the schema's own definitions.
    """
    raw = copy.deepcopy(schema)
    for key in ("$schema", "$id"):
        raw.pop(key, None)
    defs = {**raw.pop("definitions", {}), **raw.pop("$defs", {})}
    _check_refs([raw, *defs.values()], defs)
    try:
        out = _inline(raw, defs)
    except RecursionError:
        raise ValueError("the schema is recursive, which a tool's arguments cannot be") from None
    return _as_arguments(out)


def _check_refs(node: Any, defs: dict[str, Any]) -> None:
    if isinstance(node, list):
        for item in node:
            _check_refs(item, defs)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if ref is not None:
            prefixes = ("#/$defs/", "#/definitions/")
            if not (isinstance(ref, str) and ref.startswith(prefixes)):
                raise ValueError(f"unsupported $ref {ref!r} (the schema is probably recursive)")
            if ref.rsplit("/", 1)[-1] not in defs:
                raise ValueError(f"$ref {ref!r} points to a definition that does not exist")
        for value in node.values():
            _check_refs(value, defs)
