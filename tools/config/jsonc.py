"""JSON with comments (OpenCode's ``opencode.jsonc``), parsed with the line of every key.

``//`` and ``/* */`` comments and trailing commas are accepted; everything else is
strict JSON.  Strings and numbers are scanned by the standard library's own JSON
scanners, so escapes and number forms behave exactly as ``json.loads``.  We keep
our own small parser because config errors must name the line of the offending
key: the JSON5 libraries (``json5``, ``pyjson5``) return plain dicts with no
positions, so they could only place syntax errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import NUMBER_RE
from typing import Any, NoReturn

KeyPath = tuple[str | int, ...]


class ParseError(ValueError):
    """A syntax error, with the 1-based line and column where it was found."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass
class Parsed:
    value: Any
    # key path -> 1-based line of that key (or of the array item)
    lines: dict[KeyPath, int] = field(default_factory=dict)
    # keys given twice in one object: (key path, line, line of the first); JSON keeps
    # the last silently, so a second "permission" could hide the first one's denials
    duplicates: list[tuple[KeyPath, int, int]] = field(default_factory=list)

    def line_of(self, path: KeyPath) -> int | None:
        """The line of ``path``, else of its nearest recorded ancestor."""
        for end in range(len(path), 0, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


_LITERALS = {"true": True, "false": False, "null": None}
_WHITESPACE = " \t\r\n\ufeff"
_MAX_DEPTH = 200


def parse(text: str) -> Parsed:
    """Parse JSONC text; raise ``ParseError`` with the line and column of a mistake."""
    return _Parser(text).document()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.lines: dict[KeyPath, int] = {}
        self.duplicates: list[tuple[KeyPath, int, int]] = []

    def document(self) -> Parsed:
        self.skip()
        if self.pos == len(self.text):  # empty, or only comments: no settings
            return Parsed(None)
        value = self.value((), 0)
        self.skip()
        if self.pos < len(self.text):
            self.fail("unexpected text after the end of the JSON value")
        return Parsed(value, self.lines, self.duplicates)

    # -- positions and errors ------------------------------------------------

    def line_at(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def fail(self, message: str, pos: int | None = None) -> NoReturn:
        pos = self.pos if pos is None else pos
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ParseError(message, self.line_at(pos), column)

    def describe_here(self) -> str:
        if self.pos >= len(self.text):
            return "end of file"
        return repr(self.text[self.pos])

    # -- lexing ----------------------------------------------------------------

    def skip(self) -> None:
        """Skip whitespace and comments."""
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in _WHITESPACE:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    self.fail("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def string(self) -> str:
        try:
            value: str
            value, self.pos = scanstring(self.text, self.pos + 1, True)
        except json.JSONDecodeError as error:
            if self.text[error.pos : error.pos + 1] in ("\n", "\r"):
                self.fail("unterminated string (the closing quote is missing)", error.pos)
            message = error.msg.removesuffix(" starting at").removesuffix(" at")
            self.fail(message[0].lower() + message[1:], error.pos)
        return value

    # -- values ----------------------------------------------------------------

    def value(self, path: KeyPath, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            self.fail("nested too deeply")
        if self.pos >= len(self.text):
            self.fail("expected a value, found end of file")
        ch = self.text[self.pos]
        if ch == "{":
            return self.object(path, depth)
        if ch == "[":
            return self.array(path, depth)
        if ch == '"':
            return self.string()
        number = NUMBER_RE.match(self.text, self.pos)
        if number:
            integer, fraction, exponent = number.groups()
            self.pos = number.end()
            if fraction or exponent:
                return float(integer + (fraction or "") + (exponent or ""))
            return int(integer)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        self.fail(f"expected a value, found {self.describe_here()}")

    def object(self, path: KeyPath, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.pos += 1
        while True:
            self.skip()
            if self.take("}"):  # empty object or trailing comma
                return result
            if not self.text.startswith('"', self.pos):
                self.fail(f"expected a quoted key or '}}', found {self.describe_here()}")
            line = self.line_at(self.pos)
            key = self.string()
            if key in result:
                self.duplicates.append(((*path, key), line, self.lines[(*path, key)]))
            else:
                self.lines[(*path, key)] = line
            self.skip()
            if not self.take(":"):
                self.fail(f"expected ':' after the key, found {self.describe_here()}")
            self.skip()
            result[key] = self.value((*path, key), depth + 1)
            if self.closed_after_item("}"):
                return result

    def array(self, path: KeyPath, depth: int) -> list[Any]:
        result: list[Any] = []
        self.pos += 1
        while True:
            self.skip()
            if self.take("]"):  # empty array or trailing comma
                return result
            self.lines[(*path, len(result))] = self.line_at(self.pos)
            result.append(self.value((*path, len(result)), depth + 1))
            if self.closed_after_item("]"):
                return result

    def take(self, token: str) -> bool:
        """Step over ``token`` when it comes next."""
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def closed_after_item(self, close: str) -> bool:
        """After an item: True past the closing bracket, False past a comma."""
        self.skip()
        if self.take(","):
            return False
        if self.take(close):
            return True
        self.fail(f"expected ',' or '{close}', found {self.describe_here()}")
