"""The README's generated parts and its test command stay true."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("gen_readme", ROOT / "scripts" / "gen_readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tool_table_is_generated_from_the_catalogue() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _generator().render(text) == text, "run: .venv/bin/python scripts/gen_readme.py"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```sh\n(.*?)\n```", readme, re.DOTALL)
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command.strip() in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
