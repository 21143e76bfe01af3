"""toolhost's editor-agnostic tool framework and built-in tools.

Usable as a library with no editor attached::

    from tools import ToolHost
    result = await ToolHost(Path(".")).execute("grep", {"pattern": "TODO"})

Nothing here imports pygls or lsprotocol; ``server/`` adapts this to JSON-RPC.

Each name below is imported when it is first asked for (PEP 562), so that importing
one module of the package (``tools.editor``, ``tools.worktree``) does not import the
whole framework: ``toolhost list`` and the sidecar's start pay only for what they use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # ``tool`` is the module tools.tool, callable: ``from tools import tool`` declares
    # custom tools.
    from tools import tool
    from tools.config.effective import Config
    from tools.config.opencode import config_from_opencode
    from tools.context import ToolContext
    from tools.editor import EditorBridge
    from tools.errors import (
        NotFoundError,
        PermissionDeniedError,
        PermissionRejectedError,
        ToolError,
    )
    from tools.host import ToolHost
    from tools.model import ModelRef
    from tools.result import Attachment, ToolResult
    from tools.tool import Annotations, Tool, define

# Where each exported name lives.
_EXPORTS = {
    "Annotations": "tools.tool",
    "Attachment": "tools.result",
    "Config": "tools.config.effective",
    "EditorBridge": "tools.editor",
    "ModelRef": "tools.model",
    "NotFoundError": "tools.errors",
    "PermissionDeniedError": "tools.errors",
    "PermissionRejectedError": "tools.errors",
    "Tool": "tools.tool",
    "ToolContext": "tools.context",
    "ToolError": "tools.errors",
    "ToolHost": "tools.host",
    "ToolResult": "tools.result",
    "config_from_opencode": "tools.config.opencode",
    "define": "tools.tool",
}

__all__ = [
    "Annotations",
    "Attachment",
    "Config",
    "EditorBridge",
    "ModelRef",
    "NotFoundError",
    "PermissionDeniedError",
    "PermissionRejectedError",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolHost",
    "ToolResult",
    "config_from_opencode",
    "define",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
