"""Shared fixtures: a ToolHost on a temp worktree and a scriptable headless editor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import parallel
from tools.editor import EditorBridge
from tools.host import ToolHost
from tools.permission.asks import PermissionReply, PermissionRequest
from tools.result import ToolResult


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    parallel.early_files_first(items)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return parallel.workers(config)


class RecordingEditor(EditorBridge):
    """Answers every ask with ``reply`` and records the asks and updates it saw."""

    def __init__(self, reply: str = "once", message: str | None = None) -> None:
        super().__init__()
        self.reply = reply
        self.message = message
        self.asks: list[PermissionRequest] = []
        self.updates: list[dict[str, Any]] = []
        self.buffers: dict[Path, str] = {}

    async def ask_permission(self, request: PermissionRequest) -> PermissionReply:
        self.asks.append(request)
        return PermissionReply(self.reply, self.message)  # type: ignore[arg-type]

    def unsaved_text(self, path: Path | str) -> str | None:
        return self.buffers.get(Path(path))

    def notify_update(self, update: dict[str, Any]) -> None:
        self.updates.append(update)


@pytest.fixture(scope="session", autouse=True)
def _isolated_global_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The global config, state and runtime dirs are empty temp dirs, never the developer's.

    Session-wide, so a module or test that sets its own global dir wins; servers the
    tests spawn inherit the environment.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        # The trust store and the lock files of attachable sidecars: never the user's.
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
        runtime = tmp_path_factory.mktemp("xdg-runtime")
        runtime.chmod(0o700)
        patch.setenv("XDG_RUNTIME_DIR", str(runtime))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        yield


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLHOST_DATA_DIR", str(tmp_path_factory.mktemp("toolhost-data")))


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def editor() -> RecordingEditor:
    return RecordingEditor()


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    return ToolHost(worktree)


class Runner:
    """``await run("read", {...})`` with one session shared across calls."""

    def __init__(self, host: ToolHost, editor: RecordingEditor) -> None:
        self.host = host
        self.editor = editor
        self.session_id = "ses_test"

    async def __call__(self, tool: str, args: Any, **kwargs: Any) -> ToolResult:
        return await self.host.execute(
            tool, args, editor=self.editor, session_id=self.session_id, **kwargs
        )


@pytest.fixture
def run(host: ToolHost, editor: RecordingEditor) -> Iterator[Runner]:
    yield Runner(host, editor)
