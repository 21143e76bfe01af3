"""Custom tools: files in ``.opencode/tools/`` (Python, or OpenCode's own JS/TS) and plugins.

``tool`` is what a Python tool file calls (as ``from tools import tool``: the module
``tools.tool`` forwards calls here); ``CustomTools`` is what ``ToolHost`` uses to load them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tools.custom.api import CustomContext, ToolDefinitionError, ToolSpec, tool
    from tools.custom.loader import CustomTools, LoadProblem, load_all

# Imported on first use: the Python tool API is built on pydantic, which a folder with
# no Python tools never needs.
_HOMES = {
    "CustomContext": "tools.custom.api",
    "ToolDefinitionError": "tools.custom.api",
    "ToolSpec": "tools.custom.api",
    "tool": "tools.custom.api",
    "CustomTools": "tools.custom.loader",
    "LoadProblem": "tools.custom.loader",
    "load_all": "tools.custom.loader",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "CustomContext",
    "CustomTools",
    "LoadProblem",
    "ToolDefinitionError",
    "ToolSpec",
    "load_all",
    "tool",
]
