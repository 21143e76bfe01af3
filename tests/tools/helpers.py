"""Setup shared by the tests of the tools that change files: edit, write, multiedit, apply_patch."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner
from tools.config.opencode import config_from_opencode
from tools.host import ToolHost


def ask_for_edits(host: ToolHost) -> None:
    host.set_config(config_from_opencode({"permission": {"edit": "ask"}}))


def mark_read(run: Runner, path: Path) -> None:
    """What the read tool records (reference §4), without depending on it."""
    run.host.sessions.get(run.session_id).record_read(path)


def make(path: Path, data: bytes | str, *, read_by: Runner | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if read_by is not None:
        mark_read(read_by, path)
    return path
