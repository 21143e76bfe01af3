"""The built-in tools, one module each, with the model-facing prose in ``<id>.txt``."""

from __future__ import annotations

import importlib

from tools.tool import Tool

BUILTIN_MODULES = (
    "bash",
    "read",
    "glob",
    "grep",
    "list",
    "edit",
    "write",
    "multiedit",
    "webfetch",
    "todo",
    "skill",
    "apply_patch",
    "lsp",
)


def builtin_tools() -> list[Tool]:
    """Each module exposes ``tool``, or ``tools`` when it defines several (todo)."""
    found: list[Tool] = []
    for name in BUILTIN_MODULES:
        module = importlib.import_module(f"tools.builtin.{name}")
        found.extend(getattr(module, "tools", None) or [module.tool])
    return found


def invalid_tool() -> Tool:
    from tools.builtin.invalid import tool

    return tool
