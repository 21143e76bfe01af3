"""Installed plugins: packages declaring entry points in the group ``toolhost.tools``.

::

    [project.entry-points."toolhost.tools"]
    deploy = "my_pkg.tools:deploy"      # one tool, named after the entry point
    acme = "my_pkg.acme_tools"          # a module: default -> acme, x -> acme_x

An entry point may name a ``tool(...)`` result, a ``define``-made ``Tool`` (renamed to
the entry point's name) or a module (its tools by the files' naming rule).
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from importlib import metadata

from tools.custom.naming import LoadError, Named, check_id
from tools.tool import Tool

GROUP = "toolhost.tools"


def entry_points() -> list[metadata.EntryPoint]:
    importlib.invalidate_caches()  # see packages installed since the last look
    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: (ep.name, ep.value))


def fingerprint(eps: list[metadata.EntryPoint]) -> tuple[tuple[str, str, str], ...]:
    return tuple((ep.name, ep.value, _dist(ep)) for ep in eps)


def source(ep: metadata.EntryPoint) -> str:
    """How ``toolhost list`` names a plugin.

    ``entry point deploy = my_pkg.tools:deploy (my-pkg 1.0)``
    """
    return f"entry point {ep.name} = {ep.value} ({_dist(ep) or 'unknown package'})"


def _dist(ep: metadata.EntryPoint) -> str:
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else ""


class PluginError(LoadError):
    """An entry point provides no tool; the message says why."""


def load(ep: metadata.EntryPoint) -> list[Named]:
    """The tools one entry point provides; ``PluginError`` says why it provides none."""
    from tools.custom.api import ToolSpec
    from tools.custom.python_loader import from_spec, tools_in

    try:
        target = ep.load()
    except (Exception, SystemExit) as error:
        raise PluginError(f"importing it failed: {type(error).__name__}: {error}") from None
    if isinstance(target, types.ModuleType):
        found = tools_in(target, ep.name, source(ep))
        if not found:
            raise PluginError("the module defines no tool")
        return found
    check_id(ep.name)
    if isinstance(target, ToolSpec):
        return [Named(ep.name, from_spec(ep.name, target, source(ep)))]
    if isinstance(target, Tool):
        return [Named(ep.name, dataclasses.replace(target, id=ep.name))]
    raise PluginError(
        f"it points to a {type(target).__name__}, not to a tool(...) result, a Tool or a module"
    )
