"""What every custom-tool loader shares: the naming rule, the found tool, the load error.

Kept apart from the loaders so that finding no custom tools imports none of them (nor
pydantic, which the Python tool API is built on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.tool import Tool

TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class LoadError(Exception):
    """A file could not be loaded; the message says why, for ``toolhost list``."""


@dataclass(frozen=True)
class Named:
    """A tool found in a module, with the id the naming rule gives it."""

    id: str
    tool: Tool


def tool_id(stem: str, name: str) -> str:
    """``default`` is the file's tool; any other name ``x`` is ``<stem>_x``."""
    return stem if name == "default" else f"{stem}_{name}"


def check_id(candidate: str) -> None:
    if not TOOL_ID.fullmatch(candidate):
        raise LoadError(
            f"the tool name {candidate!r} is not usable: model APIs accept 1-64 letters, "
            "digits, _ and -; rename the file (or the variable)"
        )
