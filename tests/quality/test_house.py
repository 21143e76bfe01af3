"""The house rules of docs/architecture.md, held: no import circle among the modules of
``tools/`` and ``server/`` (``scripts/import_circles.py``), no Python module over 600
lines, only the shell at the root of ``tools/``, and a map that names every source file
(every module of ``tools/`` and ``server/``, every Lua file of the Neovim plugin, every
TypeScript file of the VS Code extension) and no file that is not there.

A file counts as named when some backticked path on the page ends with it (``fsio/paths.py``
names ``tools/fsio/paths.py``) and names no other source file.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
MAP = ROOT / "docs" / "architecture.md"
MAX_LINES = 600
# The shell: what every tool and caller shares. Anything else goes in a family folder.
SHELL = {
    *("__init__", "abort", "context", "editor", "errors", "host", "model", "registry"),
    *("result", "session", "tool", "truncation", "worktree"),
}


def import_circles() -> list[list[str]]:
    spec = importlib.util.spec_from_file_location(
        "import_circles", ROOT / "scripts" / "import_circles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: list[list[str]] = module.circles(ROOT)
    return found


def python_modules() -> list[Path]:
    return sorted(p for package in ("tools", "server") for p in (ROOT / package).rglob("*.py"))


def only_a_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) <= 1 and all(isinstance(node, ast.Expr) for node in body)


def source_files() -> list[str]:
    """Every file the map must name, relative to the repository (a package whose
    ``__init__.py`` holds only its docstring is named by its modules)."""
    files = [p for p in python_modules() if not (p.name == "__init__.py" and only_a_docstring(p))]
    files += sorted((ROOT / "editors" / "neovim").rglob("*.lua"))
    files += sorted((ROOT / "editors" / "vscode" / "src").rglob("*.ts"))
    return [p.relative_to(ROOT).as_posix() for p in files]


def named_paths() -> set[str]:
    """Every backticked token on the map that looks like a source path."""
    tokens = re.findall(r"`([^`\s]+)`", MAP.read_text(encoding="utf-8"))
    return {t for t in tokens if re.fullmatch(r"[\w./-]+\.(py|lua|ts)", t)}


def ends_with(path: str, token: str) -> bool:
    return path == token or path.endswith("/" + token.lstrip("./"))


def test_no_import_circles() -> None:
    circles = import_circles()
    shown = "\n".join(f"- {', '.join(c)}" for c in circles)
    assert not circles, (
        f"modules that import each other (counting imports in functions and under "
        f"TYPE_CHECKING):\n{shown}\nrun: python scripts/import_circles.py"
    )


def test_no_python_module_over_600_lines() -> None:
    long = {
        p.relative_to(ROOT).as_posix(): n
        for p in python_modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these by job (over {MAX_LINES} lines): {long}"


def test_the_root_of_tools_holds_only_the_shell() -> None:
    root = {p.stem for p in (ROOT / "tools").glob("*.py")}
    assert root == SHELL, (
        f"tools/ holds only the shell; put {sorted(root - SHELL)} in a family folder "
        "(docs/architecture.md, 'Where new things go')"
    )


def test_the_map_names_every_source_file() -> None:
    tokens = named_paths()
    files = source_files()
    unnamed = []
    for path in files:
        naming = [t for t in tokens if ends_with(path, t)]
        if not any(sum(ends_with(other, t) for other in files) == 1 for t in naming):
            unnamed.append(path)
    assert not unnamed, (
        "docs/architecture.md does not name these (a backticked path that ends with the "
        f"file's and names no other file, with a line on its job): {unnamed}"
    )


def test_the_map_names_no_file_that_is_not_there() -> None:
    every = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
    every = [p for p in every if not p.startswith((".venv/", ".git/")) and "node_modules/" not in p]
    missing = sorted(t for t in named_paths() if not any(ends_with(p, t) for p in every))
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
