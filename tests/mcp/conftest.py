"""What the MCP tests share: after each test, the check that it left no process running
(``tests/acp/leftovers.py``): an MCP host's end must end the ``toolhost mcp`` it started,
and a cancelled or ended call the command it ran."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.leftovers import nothing_left_behind


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from nothing_left_behind(tmp_path, monkeypatch)
