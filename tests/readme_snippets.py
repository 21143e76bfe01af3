"""The README's agent snippets, for the tests that run them (``<!-- snippet: NAME -->``)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def snippet(name: str) -> str:
    """The fenced block right after ``<!-- snippet: name -->`` in the README."""
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```\w*\n(.*?)\n```", text, re.DOTALL)
    assert found, f"README.md has no snippet named {name}"
    return found.group(1)
