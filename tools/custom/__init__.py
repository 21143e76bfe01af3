"""Custom tools: files in ``.opencode/tools/`` (Python, or OpenCode's own JS/TS) and plugins.

``tool`` (also exported as ``tools.tool``: ``from tools import tool``) is what a Python
tool file calls; ``CustomTools`` is what ``ToolHost`` uses to load them.
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
