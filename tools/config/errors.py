"""The config's error vocabulary: a key's path, a wrong value (``ConfigError``), and a
source that could not be used (``ConfigProblem``), worded for a person and for a log."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KeyPath = tuple[str | int, ...]

INIT_OPTIONS_SOURCE = "initializationOptions.config"

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")


def format_key(path: KeyPath) -> str:
    """``("permission", "bash", "rm *")`` -> ``permission.bash["rm *"]``."""
    parts: list[str] = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            parts.append(f".{part}" if parts else part)
        else:
            parts.append(f"[{json.dumps(part)}]")
    return "".join(parts)


def show(value: Any) -> str:
    """A config value as a user wrote it (JSON spelling: ``"yes"``, ``true``, ``null``)."""
    return json.dumps(value, default=str)


class ConfigError(ValueError):
    """A config value is wrong; ``path`` is the key, and the message names it."""

    def __init__(self, message: str, path: KeyPath = ()) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{format_key(path)}: {message}" if path else message)

    @property
    def key(self) -> str | None:
        return format_key(self.path) if self.path else None


@dataclass(frozen=True)
class ConfigProblem:
    """A config source that could not be used, and where it went wrong."""

    file: Path | None  # None: initializationOptions.config
    line: int | None
    key: str | None
    message: str
    column: int | None = None

    @property
    def source(self) -> str:
        return str(self.file) if self.file is not None else INIT_OPTIONS_SOURCE

    def __str__(self) -> str:
        """Compiler style, for the log and ``toolhost list``: ``file:line:col: key: message``."""
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def sentence(self) -> str:
        """One sentence for a person (``window/showMessage``)."""
        position = ""
        if self.line is not None:
            position = f"line {self.line}"
            if self.column is not None:
                position += f", column {self.column}"
            position += ": "
        detail = f"{self.key}: {self.message}" if self.key else self.message
        return (
            f"toolhost: could not use {self.source} ({position}{detail}). Until it is "
            "fixed, every tool asks first, and every denial it and the other config files "
            "state still applies."
        )
