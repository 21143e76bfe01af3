"""Custom tools: files in ``.opencode/tools/`` (Python, or OpenCode's own JS/TS) and plugins.

``tool`` is what a Python tool file calls (as ``from tools import tool``: the module
``tools.tool`` forwards calls here); ``CustomTools`` is what ``ToolHost`` uses to load them.
"""

from tools.custom.api import CustomContext, ToolDefinitionError, ToolSpec, tool
from tools.custom.loader import CustomTools, LoadProblem, load_all

__all__ = [
    "CustomContext",
    "CustomTools",
    "LoadProblem",
    "ToolDefinitionError",
    "ToolSpec",
    "load_all",
    "tool",
]
