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
import os
import sys
import types
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING

from tools.custom.naming import LoadError, Named, check_id
from tools.tool import Tool

if TYPE_CHECKING:
    from importlib import metadata

GROUP = "toolhost.tools"
METADATA_FOLDERS = (".dist-info", ".egg-info")


def entry_points() -> list[metadata.EntryPoint]:
    if not declared_on_path(GROUP):
        return []
    from importlib import metadata

    importlib.invalidate_caches()  # see packages installed since the last look
    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: (ep.name, ep.value))


def declared_on_path(group: str) -> bool:
    """False only when no installed distribution can declare entry points in ``group``.

    Importing ``importlib.metadata`` and scanning with it costs 20-30 ms of every start,
    and most environments have no plugin. This looks only for the group's name in the
    ``entry_points.txt`` of each ``*.dist-info`` / ``*.egg-info`` folder on ``sys.path``;
    whatever it cannot look into (a zip or an egg on the path, a finder of distributions
    other than the standard one) counts as a yes, and ``importlib.metadata`` decides.
    """
    if any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    ):
        return True
    needle = group.encode()
    for entry in sys.path:
        folder = entry or "."
        if folder.endswith(".egg"):
            return True
        try:
            with os.scandir(folder) as found:
                names = [e.name for e in found if e.name.endswith(METADATA_FOLDERS)]
        except NotADirectoryError:  # a zip archive
            return True
        except OSError:  # a missing entry, or a path hook's name
            continue
        for name in names:
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as handle:
                    if needle in handle.read():
                        return True
            except OSError:  # no entry points (or an .egg-info file, which has none)
                continue
    return False


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
