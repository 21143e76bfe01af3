"""The JSON Schema a model sees: self-contained, described, no pydantic noise.

pydantic emits ``title`` everywhere and puts nested models under ``$defs``; many
providers reject ``$ref``.  We inline every reference and drop titles once, when a
tool is defined.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_DROP = {"title"}


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema = _inline(raw, defs)
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
