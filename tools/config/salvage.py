"""What a broken config source still says it forbids, read as leniently as possible.

A source that fails to parse or validate is not used (``tools.config.files``), and
the config fails closed; but leaving it out entirely would drop its denials too (a
``*.pem`` read deny would become an allow).  So its denials are salvaged:

- JSON/JSONC text is scanned token by token, past syntax errors, for ``"deny"``
  under ``permission`` (or a misspelling of it: ``permissions``, ``permision``) and
  for tools switched off (anything but ``true`` under ``tools``).  Every occurrence
  counts, so a duplicate key cannot hide one.
- YAML is read event by event up to the error; each tool entry's
  ``denied_commands`` and ``enabled`` that is not ``true`` count.
- Already-parsed data (a source that parsed but did not validate) is walked the same way.

Only restrictions are salvaged: nothing here can allow anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.permission.rules import Rule, Ruleset, expand_home

if TYPE_CHECKING:
    import yaml


@dataclass
class Salvage:
    denies: Ruleset = field(default_factory=list)
    off: list[str] = field(default_factory=list)  # tool ids switched off

    def extend(self, other: Salvage) -> None:
        self.denies.extend(other.denies)
        self.off.extend(other.off)


def permission_like(key: object) -> bool:
    """``permission``, or a key a person probably meant as it."""
    if not isinstance(key, str):
        return False
    word = key.strip().lower()
    if word == "permission":
        return True
    from difflib import get_close_matches  # only for a key that is not already right

    return bool(get_close_matches(word, ["permission"], 1, 0.8))


# -- already-parsed data ---------------------------------------------------------------


def from_opencode_data(data: Any) -> Salvage:
    """The denials and switched-off tools in an OpenCode-format object, however malformed."""
    found = Salvage()
    if not isinstance(data, Mapping):
        return found
    for key, value in data.items():
        if permission_like(key):
            found.denies += list(_denies(value))
        elif key == "tools" and isinstance(value, Mapping):
            found.off += [str(tool) for tool, on in value.items() if on is not True]
    return found


def _denies(permission: Any) -> Iterator[Rule]:
    if permission == "deny":
        yield Rule("*", "*", "deny")
    if not isinstance(permission, Mapping):
        return
    for name, value in permission.items():
        if value == "deny":
            yield Rule(str(name), "*", "deny")
        elif isinstance(value, Mapping):
            for pattern, action in value.items():
                if action == "deny":
                    yield Rule(str(name), expand_home(str(pattern)), "deny")


def from_registry_data(data: Any) -> Salvage:
    """The denials in a ``tools.yaml`` registry, however malformed."""
    from tools.config.yaml import command_pattern

    found = Salvage()
    tools = data.get("tools") if isinstance(data, Mapping) else None
    for entry in tools if isinstance(tools, list) else []:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("name")
        if "enabled" in entry and entry["enabled"] is not True and isinstance(name, str):
            found.off.append(name.strip())
        permissions = entry.get("permissions")
        denied = permissions.get("denied_commands") if isinstance(permissions, Mapping) else None
        for command in denied if isinstance(denied, list) else []:
            if isinstance(command, str) and command.strip():
                # Commands can only be listed for bash, so a denial is one for bash.
                found.denies.append(Rule("bash", command_pattern(command.strip()), "deny"))
    return found


# -- JSON / JSONC text, past syntax errors ---------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*(?:"|$))
  | (?P<punct>[{}\[\]:,])
  | (?P<word>[^\s{}\[\]:,"/]+|/)
    """,
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)


def from_jsonc_text(text: str) -> Salvage:
    """Denials and switched-off tools anywhere in ``text``, whatever else is wrong with it."""
    found = Salvage()
    for path, value in _values(text):
        if not path or ARRAY in path or "" in path:
            continue
        if permission_like(path[0]):
            rule = _deny_at(path[1:], value)
            if rule is not None:
                found.denies.append(rule)
        elif path[0] == "tools" and len(path) == 2 and value is not True:
            found.off.append(path[1])
    return found


def _deny_at(rest: list[str], value: Any) -> Rule | None:
    if value != "deny":
        return None
    if not rest:
        return Rule("*", "*", "deny")
    if len(rest) == 1:
        return Rule(rest[0], "*", "deny")
    return Rule(rest[0], expand_home(rest[1]), "deny")


@dataclass
class _Frame:
    kind: str  # "{" or "["
    key: str | None = None  # the key whose value is being read (objects)
    expect_key: bool = True


ARRAY = "[]"  # a path step into an array


def _values(text: str) -> Iterator[tuple[list[str], Any]]:
    """``(key path, scalar value)`` for each scalar, as well as a broken text allows.

    Lenient on purpose: a missing comma, a stray bracket or an unterminated string
    costs the values around it, not the rest of the file.
    """
    stack: list[_Frame] = []
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "space":
            continue
        top = stack[-1] if stack else None
        if kind == "punct":
            if token in "{[":
                stack.append(_Frame(token))
            elif token in "}]":
                if stack:
                    stack.pop()
                if stack and stack[-1].kind == "{":  # the parent's value is complete
                    stack[-1].key, stack[-1].expect_key = None, True
            elif token == ":" and top is not None and top.kind == "{":
                top.expect_key = False
            continue
        value: Any = _scalar(kind, token)
        if top is not None and top.kind == "{" and top.expect_key:
            top.key = value if isinstance(value, str) else str(value)
            continue
        path = [(f.key or "") if f.kind == "{" else ARRAY for f in stack]
        yield path, value
        if top is not None and top.kind == "{":
            top.key, top.expect_key = None, True


def _scalar(kind: str | None, token: str) -> Any:
    if kind == "string":
        body = token[1:-1] if len(token) > 1 and token.endswith('"') else token[1:]
        return body.replace('\\"', '"').replace("\\\\", "\\")
    return {"true": True, "false": False, "null": None}.get(token, token)


# -- YAML text, up to the error ---------------------------------------------------------


def from_yaml_text(text: str) -> Salvage:
    """The registry's denials as far as the YAML can be read."""
    return from_registry_data(_partial_yaml(text))


def _partial_yaml(text: str) -> Any:
    """The document built from YAML events up to the first error (aliases ignored)."""
    root: list[Any] = []
    stack: list[Any] = [root]
    keys: list[Any] = [None]

    def add(value: Any) -> None:
        container = stack[-1]
        if isinstance(container, list):
            container.append(value)
        elif keys[-1] is None:
            keys[-1] = value if isinstance(value, str) else str(value)
            container.setdefault(keys[-1], None)
        else:
            container[keys[-1]] = value
            keys[-1] = None

    import yaml  # only for a broken tools.yaml: PyYAML stays out of a cold start

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.ScalarEvent):
                add(_yaml_scalar(event))
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                new: Any = {} if isinstance(event, yaml.MappingStartEvent) else []
                add(new)
                stack.append(new)
                keys.append(None)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                stack.pop()
                keys.pop()
    except yaml.YAMLError:
        pass
    return root[0] if root else None


def _yaml_scalar(event: yaml.ScalarEvent) -> Any:
    if event.style is None and event.value in ("true", "True", "TRUE"):
        return True
    if event.style is None and event.value in ("false", "False", "FALSE"):
        return False
    return event.value
