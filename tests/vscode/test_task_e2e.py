"""``task`` and ``question`` in a real VS Code (code-server 4.100.3, VS Code 1.100.3).

The VS Code runner of ``task`` uses the user's own chat models (``vscode.lm``). A test
extension (``e2e/task-helper``) registers a scripted chat model through VS Code 1.100's
``vscode.lm.registerChatModelProvider`` (the proposed ``chatProvider`` API of that
release; the finalized ``registerLanguageModelChatProvider`` arrived later), enabled
with code-server's ``--enable-proposed-api``. toolhost's extension then selects that
model with ``vscode.lm.selectChatModels`` and runs the sub-agent on it: the model asks
for a read, VS Code runs it through the sidecar in the child session, the model gets
the file back and answers. The browser driver (``e2e/drive_subagents.js``) watches
the sub-agent's progress in the status bar and answers the ``question`` tool's quick
picks (one option; several ticked; a typed answer) as a person does.

Shares the install, packaging and launch steps of ``test_extension_e2e``; skipped
only where chromium or npm is missing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.vscode.support import EXTENSION, output_of, require_node, run
from tests.vscode.test_extension_e2e import (
    BIND,
    E2E,
    Layout,
    Scenario,
    chromium,
    end_group,
    install_code_server,
    install_extensions,
    package,
    require_debs,
    wait_healthy,
    workbench_errors,
)

HELPER_ID = "toolhost-tests.task-helper"


def package_helper(tmp: Path) -> Path:
    helper = tmp / "task-helper.vsix"
    vsce = EXTENSION / "node_modules" / ".bin" / "vsce"
    args = [str(vsce), "package", "--allow-missing-repository", "-o", str(helper)]
    done = run(args, E2E / "task-helper", 300)
    assert done.returncode == 0, f"packaging the task helper failed:\n{output_of(done)}"
    return helper


def launch(code_server: Path, layout: Layout) -> tuple[subprocess.Popen[bytes], int]:
    """code-server as test_extension_e2e launches it, with the helper's proposed API on."""
    binary = code_server / "node_modules" / ".bin" / "code-server"
    flags = ["--auth", "none", *BIND, "--disable-telemetry"]
    flags += ["--disable-update-check", "--disable-workspace-trust"]
    flags += ["--disable-getting-started-override", "--enable-proposed-api", HELPER_ID]
    with (layout.tmp / "code-server.log").open("w") as log:
        server = subprocess.Popen(
            [str(binary), *flags, *layout.dirs(), str(layout.workspace)],
            env=layout.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return server, wait_healthy(layout, server)


def drive(code_server: Path, layout: Layout, port: int) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/?folder={layout.workspace}"
    script = E2E / "drive_subagents.js"
    args = [str(script), url, str(layout.marker), str(layout.control), str(layout.shots)]
    env = {
        **layout.env(),
        "NODE_PATH": str(code_server / "pw" / "node_modules"),
        "CHROMIUM": chromium() or "",
    }
    done = subprocess.run(
        ["node", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    lines = done.stdout.strip().splitlines()
    try:
        seen = json.loads(lines[-1]) if lines else {}
    except ValueError:
        seen = {}
    assert seen, f"the browser driver printed nothing usable:\n{output_of(done)}"
    return seen


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    require_node()
    require_debs()  # (another worker may be installing them: it waits)
    tmp = tmp_path_factory.mktemp("vscode-task-e2e")
    timings: dict[str, float] = {}
    started = time.monotonic()
    code_server = install_code_server(timings)
    vsix, _ = package(tmp_path_factory, timings)
    helper = package_helper(tmp)
    layout = Layout(tmp)
    layout.create()
    install_extensions(code_server, layout, (vsix, helper))
    server, port = launch(code_server, layout)
    try:
        seen = drive(code_server, layout, port)
    finally:
        end_group(server)
    timings["total"] = time.monotonic() - started
    shown = ", ".join(f"{k}: {v:.1f}" for k, v in timings.items())
    print(f"\nVS Code task e2e timings (s): {shown}")
    return Scenario(layout.steps(), seen, layout.workspace, layout.shots, timings)


def test_a_scripted_chat_model_is_registered_and_task_is_offered(scenario: Scenario) -> None:
    step = scenario.step("chat-model")
    assert step["models"] == ["toolhost-tests/toolhost-e2e-model"]
    assert "task" in step["tools"] and "question" in step["tools"]


def test_the_sub_agent_runs_on_the_vscode_chat_model_through_the_sidecar(
    scenario: Scenario,
) -> None:
    step = scenario.step("task")
    assert not step["isError"], step["output"]
    assert step["output"].startswith('<task id="ses_')
    assert 'The first line of notes.txt is "saved line".' in step["output"]
    first, second = step["seen"]["requests"]
    assert first["extensionId"] == "toolhost.toolhost"
    assert "read" in first["tools"] and "grep" in first["tools"]  # explore's tools
    # explore denies the rest (the user's config may widen it, as in OpenCode); every
    # child is denied task and todowrite.
    assert not {"skill", "task", "todowrite", "question"} & set(first["tools"])
    assert "1: saved line" in second["texts"][-1]  # the read's output reached the model
    assert [(c["tool"], c["status"]) for c in step["metadata"]["calls"]] == [("read", "completed")]
    assert step["metadata"]["runner"] == "editor"


def test_the_sub_agents_calls_show_in_the_status_bar(scenario: Scenario) -> None:
    seen = scenario.user("watch-task")
    assert "Read the notes" in seen["status"] and "1/1 calls done" in seen["status"], seen


def test_a_question_with_one_answer_is_a_quick_pick(scenario: Scenario) -> None:
    seen = scenario.user("pick-single")
    assert "Database: Which database should the service use?" in seen["title"]
    assert any("SQLite" in row and "One file, no server" in row for row in seen["rows"])
    assert any("Type your own answer" in row for row in seen["rows"])
    assert seen["checkboxes"] == 0
    step = scenario.step("question-single")
    assert step["answers"] == [["SQLite"]]
    assert '"Which database should the service use?"="SQLite"' in step["output"]


def test_several_answers_and_a_typed_one(scenario: Scenario) -> None:
    multiple = scenario.user("pick-multiple")
    assert multiple["checkboxes"] >= 3, multiple
    scenario.user("type-own")
    step = scenario.step("question-multiple")
    assert step["answers"] == [["Migrations", "Backups"], ["orders"]], step


def test_the_browser_saw_no_workbench_errors(scenario: Scenario) -> None:
    assert not workbench_errors(scenario.driver)
