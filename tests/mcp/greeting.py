"""The scenario every MCP host runs against toolhost: read ``greet.py``, then edit it.

A scripted model asks for ``read`` and then ``edit`` (``'hi'`` -> ``'hello'``) under the
host's name for toolhost's tools, and answers with ``ANSWER``; the tests check the file on
disk and what each tool told the model.
"""

from __future__ import annotations

from pathlib import Path

from tests.scripted_model import Reply, Step, ToolCall

BEFORE = "def greet():\n    return 'hi'\n"
AFTER = "def greet():\n    return 'hello'\n"
ANSWER = "The greeting now says hello."
PROMPT = "Say hello instead"


def greet_file(project: Path) -> Path:
    target = project / "greet.py"
    target.write_text(BEFORE)
    return target


def edit_call(tool: str, target: Path) -> ToolCall:
    """The model's edit, named ``tool`` as the host names toolhost's ``edit``."""
    return ToolCall(tool, {"filePath": str(target), "oldString": "'hi'", "newString": "'hello'"})


def read_then_edit(prefix: str, target: Path) -> list[Step]:
    """``<prefix>read``, ``<prefix>edit``, then the answer."""
    return [
        ToolCall(f"{prefix}read", {"filePath": str(target)}),
        edit_call(f"{prefix}edit", target),
        Reply(ANSWER),
    ]


def assert_tool_results(read_result: str, edit_result: str) -> None:
    """What toolhost's ``read`` and ``edit`` told the model."""
    assert "<path>" in read_result and "2:     return 'hi'" in read_result, read_result
    assert "Edit applied successfully." in edit_result, edit_result
