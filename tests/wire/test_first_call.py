"""What a freshly started sidecar imports to answer its first call.

The import log of the real ``toolhost serve`` (``PYTHONPROFILEIMPORTTIME``) is read after
an ``initialize`` with a config and one ``read``: pydantic is not in it (built-in arguments
are checked from stored pydantic-core schemas, tools.arguments.model), nor what the other tools
are built on. A project with a Python tool file imports pydantic, so the log is seen to
catch it. (The log leaves out modules loaded through ``importlib.import_module``, as the
built-in tool modules are; tests/test_catalog.py checks those in-process.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.custom_tool_helpers import GREET, write
from tests.wire.conftest import TOOLHOST, Framed, make_project, server_env, stop


async def first_read_imports(root: Path, data_dir: Path, log: Path, *args: str) -> set[str]:
    """The modules a sidecar imported by the time its first ``read`` was answered."""
    env = {**server_env(data_dir), "PYTHONPROFILEIMPORTTIME": "1"}
    with log.open("wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            str(TOOLHOST),
            "serve",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=root,
            env=env,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            client = Framed(proc.stdout, proc.stdin)
            await client.initialize(root, {"config": {"permission": {"read": "allow"}}})
            client.send(
                id=1,
                method="tools/execute",
                params={"tool": "read", "args": {"filePath": "notes.txt"}},
            )
            answer = await client.answer_to(1)
            assert "alpha" in answer["result"]["output"], answer
        finally:
            await stop(proc)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


async def test_the_first_read_imports_no_pydantic(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    imported = await first_read_imports(root, tmp_path / "data", tmp_path / "imports.txt")
    assert "tools.config.instructions" in imported  # read's own, imported as it ran
    # A plain call's arguments are checked without pydantic-core (tools.arguments.plain).
    heavy = {"pydantic", "pydantic.main", "pydantic_core", "httpx", "yaml", "tree_sitter"}
    assert not heavy & imported


async def test_a_python_tool_file_brings_pydantic_and_the_log_shows_it(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    write(root / ".opencode" / "tools" / "greet.py", GREET)
    imported = await first_read_imports(
        root, tmp_path / "data", tmp_path / "imports.txt", "--trusted"
    )
    assert {"pydantic", "tools.custom.api"} <= imported
