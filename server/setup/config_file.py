"""An agent's config file, parsed, changed key by key and written back as it was.

JSON is rewritten with two-space indents (the layout the agents write themselves) only
when a change is needed; TOML goes through tomlkit, which keeps the user's comments,
order and spacing. A file that cannot be parsed, or whose keys hold something other
than what the change needs, raises ``SetupError`` naming the file and the key, and
nothing is written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions


class SetupError(Exception):
    """What stops ``toolhost setup`` before anything is written, in words for a person."""


class Document:
    """One config file: its text now, and the text it would have after the changes."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind  # "json" or "toml"
        self.exists = path.exists()
        try:
            self.before = path.read_text(encoding="utf-8") if self.exists else ""
        except (OSError, UnicodeDecodeError) as error:
            raise SetupError(f"{path}: cannot be read ({error}); nothing was written") from None
        self.data: Any = self._parse()
        self._original = copy.deepcopy(self.data) if kind == "json" else None

    def _parse(self) -> Any:
        if not self.before.strip():
            return tomlkit.document() if self.kind == "toml" else {}
        if self.kind == "toml":
            try:
                return tomlkit.parse(self.before)
            except tomlkit.exceptions.ParseError as error:
                raise SetupError(self._unparsable(str(error))) from None
        try:
            data = json.loads(self.before)
        except ValueError as error:
            raise SetupError(self._unparsable(_json_problem(self.before, error))) from None
        if not isinstance(data, dict):
            raise SetupError(self._unparsable("it holds no JSON object"))
        return data

    def _unparsable(self, why: str) -> str:
        return (
            f"{self.path}: cannot be parsed ({why}); nothing was written. Fix the file (or "
            f"move it away) and run toolhost setup again."
        )

    def put(self, keys: Sequence[str], value: Any) -> None:
        """``keys`` set to ``value``, the tables above created where missing; an object
        value is merged key by key, so the user's other keys in it stay."""
        if isinstance(value, dict):
            self._table(keys)
            for key, inner in value.items():
                self.put([*keys, key], inner)
            return
        table = self._table(keys[:-1])
        if table.get(keys[-1]) != value:
            table[keys[-1]] = value

    def extend(self, keys: Sequence[str], items: Sequence[str]) -> None:
        """The list at ``keys`` with ``items`` appended where missing (created if absent)."""
        table = self._table(keys[:-1])
        found = table.get(keys[-1])
        if found is None:
            table[keys[-1]] = list(items)
            return
        if not isinstance(found, list):
            raise SetupError(self._wrong(keys, found, "a list"))
        found.extend(item for item in items if item not in found)

    def _table(self, keys: Sequence[str]) -> MutableMapping[str, Any]:
        table: MutableMapping[str, Any] = self.data
        for depth, key in enumerate(keys):
            found = table.get(key)
            if found is None:
                # a TOML table that only holds tables gets no header of its own
                within = depth < len(keys) - 1
                found = tomlkit.table(is_super_table=within) if self.kind == "toml" else {}
                table[key] = found
                found = table[key]
            elif not isinstance(found, MutableMapping):
                raise SetupError(self._wrong(keys[: depth + 1], found, "a table"))
            table = found
        return table

    def _wrong(self, keys: Sequence[str], found: Any, wanted: str) -> str:
        shown = ".".join(keys)
        return (
            f"{self.path}: `{shown}` is {type(found).__name__} {found!r}, and toolhost setup "
            f"needs {wanted} there; nothing was written. Fix that key and run it again."
        )

    def after(self) -> str:
        """The file's text with the changes (the text it has when they change nothing)."""
        if self.kind == "toml":
            return tomlkit.dumps(self.data)
        if self.exists and self.data == self._original:
            return self.before
        text = json.dumps(self.data, indent=2, ensure_ascii=False)
        return text + "\n" if not self.exists or self.before.endswith("\n") else text


def _json_problem(text: str, error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        where = f"line {error.lineno} column {error.colno}: {error.msg}"
        if "//" in text or "/*" in text:
            where += "; comments cannot be kept by toolhost setup: remove them first"
        return where
    return str(error)
