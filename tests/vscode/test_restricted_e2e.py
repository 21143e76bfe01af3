"""Restricted Mode in a real VS Code (code-server): a tool file created after start is
never imported, and the folder's own config loosens nothing.

The same code-server, .vsix and browser driver as ``test_extension_e2e.py``, but with
workspace trust on and the folder never trusted (the startup prompt off, so it opens
in Restricted Mode).  The workspace ships ``opencode.json`` allowing everything; the
user's own config denies bash.  The helper extension's ``restricted`` scenario
(``e2e/helper/restricted.js``) then writes ``.opencode/tools/pwn.py``, whose import
would write a marker, and checks the catalogue and a bash call.

The gate-open proof of the same payload (a trusted folder imports such a file and
its config applies) is ``tests/security/test_config_attacks.py`` and the Neovim tier.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.vscode import test_extension_e2e as e2e
from tests.vscode.support import TOOLHOST, require_node


class RestrictedLayout(e2e.Layout):
    def create(self) -> None:
        super().create()
        settings = {
            **e2e.USER_SETTINGS,
            "security.workspace.trust.enabled": True,
            "security.workspace.trust.startupPrompt": "never",
            "security.workspace.trust.emptyWindow": False,
            "toolhost.serverCommand": [str(TOOLHOST), "serve"],
        }
        (self.user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=1))
        (self.workspace / "opencode.json").write_text('{"permission": "allow"}')
        global_config = self.tmp / "opencode-config"
        global_config.mkdir()
        (global_config / "opencode.json").write_text('{"permission": {"bash": "deny"}}')

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "TOOLHOST_E2E_SCENARIO": "restricted",
            "TOOLHOST_E2E_PWN": str(self.tmp / "pwned-by-import"),
        }


def launch_with_trust(code_server: Path, layout: e2e.Layout) -> tuple[Any, int]:
    """e2e.launch, but with workspace trust on (no --disable-workspace-trust)."""
    import subprocess

    binary = code_server / "node_modules" / ".bin" / "code-server"
    flags = ["--auth", "none", *e2e.BIND, "--disable-telemetry"]
    flags += ["--disable-update-check", "--disable-getting-started-override"]
    with (layout.tmp / "code-server.log").open("w") as log:
        server = subprocess.Popen(
            [str(binary), *flags, *layout.dirs(), str(layout.workspace)],
            env=layout.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return server, e2e.wait_healthy(layout, server)


@pytest.fixture(scope="module")
def restricted(tmp_path_factory: pytest.TempPathFactory) -> tuple[e2e.Scenario, Path]:
    require_node()
    e2e.require_debs()  # (another worker may be installing them: it waits)
    tmp = tmp_path_factory.mktemp("vscode-restricted")
    timings: dict[str, float] = {}
    code_server = e2e.install_code_server(timings)
    packages = e2e.package(tmp_path_factory, timings)
    layout = RestrictedLayout(tmp)
    layout.create()
    e2e.install_extensions(code_server, layout, packages)
    started = time.monotonic()
    server, port = launch_with_trust(code_server, layout)
    try:
        seen = e2e.run_driver(code_server, layout, port)
    finally:
        e2e.end_group(server)
    timings["scenario"] = time.monotonic() - started
    print(
        "\nRestricted Mode e2e timings (s): "
        + ", ".join(f"{k}: {v:.1f}" for k, v in timings.items())
    )
    scenario = e2e.Scenario(layout.steps(), seen, layout.workspace, layout.shots, timings)
    return scenario, tmp


def test_the_workspace_opens_in_restricted_mode_with_read_only_tools(
    restricted: tuple[e2e.Scenario, Path],
) -> None:
    scenario, _ = restricted
    step = scenario.step("restricted-activate")
    assert step["isTrusted"] is False
    assert step["readOnly"] is True and "read" in step["tools"]
    read = scenario.step("restricted-read")
    assert read["isError"] is False and "saved line" in read["output"]


def test_copilot_is_offered_only_the_read_only_static_tools(
    restricted: tuple[e2e.Scenario, Path],
) -> None:
    scenario, _ = restricted
    names = set(scenario.step("restricted-language-model-tools")["names"])
    assert {"toolhost_read", "toolhost_grep", "toolhost_glob"} <= names, names
    assert not {"toolhost_edit", "toolhost_write", "toolhost_bash"} & names, names


def test_a_tool_file_created_after_start_is_never_imported(
    restricted: tuple[e2e.Scenario, Path],
) -> None:
    scenario, tmp = restricted
    step = scenario.step("restricted-tool-file-after-start")
    assert step["imported"] is False
    assert not (tmp / "pwned-by-import").exists()
    assert "pwn" not in step["tools"]
    # The folder's opencode.json allows everything; the user's bash deny still holds
    # (and in Restricted Mode the extension does not run bash at all).
    assert step["bash"]["isError"] is True and step["ran"] is False
    # The sidecar was told, and said so in its log (the toolhost output channel).
    logs = "".join(p.read_text() for p in (tmp / "user-data" / "logs").rglob("toolhost.log"))
    assert "folder not trusted: the editor does not trust this folder" in logs


def test_a_tools_folder_moved_back_in_stops_the_sidecar(
    restricted: tuple[e2e.Scenario, Path],
) -> None:
    scenario, tmp = restricted
    step = scenario.step("restricted-tools-moved-back-in")
    assert step["before"].startswith("running"), step
    assert "has its own tool code" in step["after"], step
    assert step["imported"] is False and not (tmp / "pwned-by-import").exists()


def test_the_browser_saw_no_workbench_errors(restricted: tuple[e2e.Scenario, Path]) -> None:
    scenario, _ = restricted
    assert not e2e.workbench_errors(scenario.driver)
