"""The built-in catalogue (tools/builtin/catalog.json) says what the modules say.

The sidecar lists its built-ins from the catalogue and imports a tool's module only when
the tool first runs; a change to a tool's prose, schema or annotations must regenerate it:
``.venv/bin/python scripts/gen_catalog.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.builtin import BUILTIN_ORDER
from tools.builtin import listed as listed_when
from tools.builtin.lazy import LazyBuiltin, builtin_tools, loaded_builtin
from tools.host import ToolHost

REPO = Path(__file__).resolve().parent.parent


def test_the_catalogue_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_catalog.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("tool_id", BUILTIN_ORDER)
def test_a_lazy_builtin_shows_what_its_module_defines(tool_id: str) -> None:
    (lazy,) = [tool for tool in builtin_tools() if tool.id == tool_id]
    real = loaded_builtin(tool_id)
    assert isinstance(lazy, LazyBuiltin)
    assert lazy.to_wire() == real.to_wire()
    assert (lazy.requires, lazy.describes) == (real.requires, real.describe is not None)


def test_listing_and_running_read_imports_no_other_tool() -> None:
    code = (
        "import asyncio, sys, tempfile, pathlib\n"
        "HEAVY = ('httpx', 'yaml', 'tree_sitter', 'difflib', 'tools.agents.children', 'pydantic')\n"
        "from tools import ToolHost\n"
        "root = pathlib.Path(tempfile.mkdtemp()); (root / 'a.txt').write_text('x\\n')\n"
        "host = ToolHost(root)\n"
        "wire = [t.to_wire() for t in host.registry.tools if t.id != 'skill']\n"
        "result = asyncio.run(host.execute('read', {'filePath': str(root / 'a.txt')}))\n"
        "assert not result.is_error, result.output\n"
        "def loaded():\n"
        "    found = [m for m in sys.modules if m.startswith('tools.builtin.')]\n"
        "    return sorted(m.split('.')[-1] for m in found)\n"
        "print(' '.join(loaded()))\n"
        "print(' '.join(m for m in HEAVY if m in sys.modules))\n"
        "offered = host.offered()  # as tools/list builds it: the conditional tools decide\n"
        "print(' '.join(loaded()))\n"
        "print(' '.join(m for m in HEAVY[:-2] + HEAVY[-1:] if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    builtins, heavy, listed, heavy_listed = [*done.stdout.splitlines(), "", "", "", ""][:4]
    # Not even the invalid tool, until a call needs it (``lazy`` is the catalogue itself).
    assert builtins.split() == ["lazy", "read"]
    assert heavy == ""
    # tools/list asks whether the conditional tools (task, websearch) are offered without
    # importing them (tools.builtin.listed), and skill describes itself; nothing brings the
    # HTTP stack, YAML or pydantic along.
    assert listed.split() == ["lazy", "listed", "read", "skill"]
    assert heavy_listed == ""


@pytest.mark.parametrize("tool_id", BUILTIN_ORDER)
def test_a_conditional_builtin_is_listed_by_its_own_check(tool_id: str) -> None:
    (lazy,) = [tool for tool in builtin_tools() if tool.id == tool_id]
    real = loaded_builtin(tool_id)
    own = getattr(listed_when, tool_id, None)
    assert real.available is own  # the module's own check is the one listed_when holds
    if own is None:
        assert lazy.available is None
        return
    # The catalogue asks that check, without the module.
    assert lazy.available is not None
    host = ToolHost(REPO)
    for capabilities in (frozenset(), frozenset({"task"})):
        assert lazy.available(host, capabilities) == own(host, capabilities)


def test_no_built_in_tool_module_imports_pydantic() -> None:
    # Their arguments are checked from stored pydantic-core schemas (tools.arguments.model).
    code = (
        "import importlib, sys\n"
        "from tools.builtin import BUILTIN_ORDER\n"
        "for name in (*BUILTIN_ORDER, 'invalid'):\n"
        "    importlib.import_module('tools.builtin.' + name)\n"
        "    assert 'pydantic' not in sys.modules, name\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)
