"""Quality gates: the linters, formatters and type checkers, run by the test suite.

Each gate runs one tool over the repository and fails with the tool's own report (the
offending files and lines) and the command that fixes or reproduces it. The Python
tools come with the dev extras; tsc and prettier are editors/vscode's devDependencies
(its ``npm ci``, shared with the VS Code tiers); StyLua is the npm package
``@johnnymorganz/stylua-bin`` (the StyLua authors' build, which ships the binary) in this
folder's own package.json, since neither PyPI nor Debian has it. A Node gate skips only
when Node.js or npm is missing, and never on CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vscode.support import EXTENSION, ensure_node_modules, node_env, run

# A long file: started first, so that it does not end the parallel run (tests/README.md).
pytestmark = pytest.mark.early

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = Path(__file__).resolve().parent
PYTHON_TREES = ["tools", "server", "tests", "bench", "scripts"]
# .stylua.toml at the root covers both: the plugin and its tests.
LUA_TREES = ["editors/neovim", "tests/nvim"]


def require_node() -> None:
    """Skip without Node.js and npm, except on CI, which must run every gate."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if not missing:
        return
    reason = f"this gate needs {' and '.join(missing)} on PATH"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, and CI runs every gate")
    pytest.skip(reason)


def passes(done: subprocess.CompletedProcess[str], fix: str) -> None:
    """Fail with the tool's report and how to fix it when it did not exit 0."""
    if done.returncode == 0:
        return
    report = "\n".join(part.strip() for part in (done.stdout, done.stderr) if part.strip())
    pytest.fail(f"{report}\n\nfix: {fix}", pytrace=False)


def python_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", *args], ROOT, 300)


def test_ruff_check() -> None:
    done = python_tool("ruff", "check", "--output-format=concise", ".")
    passes(done, ".venv/bin/ruff check --fix . (then fix the rest by hand)")


def test_ruff_format() -> None:
    done = python_tool("ruff", "format", "--diff", *PYTHON_TREES)
    passes(done, f".venv/bin/ruff format {' '.join(PYTHON_TREES)}")


def test_mypy_strict() -> None:
    # files, strictness and the Python version come from [tool.mypy] in pyproject.
    done = python_tool("mypy")
    passes(done, ".venv/bin/mypy (strict, configured in pyproject.toml)")


def test_typescript_typechecks() -> None:
    require_node()
    ensure_node_modules()
    done = run(["npm", "run", "--silent", "typecheck"], EXTENSION, 300, node_env())
    passes(done, "cd editors/vscode && npm run typecheck (tsc, noEmit in tsconfig.json)")


def test_vscode_sources_are_prettier_formatted() -> None:
    require_node()
    ensure_node_modules()
    done = run(["npm", "run", "--silent", "lint"], EXTENSION, 300, node_env())
    passes(done, "cd editors/vscode && npm run format")


def test_lua_is_stylua_formatted() -> None:
    require_node()
    ensure_node_modules(HERE)
    stylua = HERE / "node_modules" / ".bin" / "stylua"
    done = run([str(stylua), "--check", *LUA_TREES], ROOT, 120)
    passes(done, f"tests/quality/node_modules/.bin/stylua {' '.join(LUA_TREES)}")
