"""toolhost's editor-agnostic tool framework and built-in tools.

Usable as a library with no editor attached::

    from tools import ToolHost
    result = await ToolHost(Path(".")).execute("grep", {"pattern": "TODO"})

Nothing here imports pygls or lsprotocol; ``server/`` adapts this to JSON-RPC.
"""

# ``tool`` is the module tools.tool, callable: ``from tools import tool`` declares custom tools.
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
