"""The VS Code extension in a real VS Code: code-server's workbench, driven by Chromium.

``@vscode/test-electron`` cannot download VS Code here, so the tier runs code-server
4.100.3 (VS Code 1.100.3, the newest that runs on Node 20), installed once into a
cache outside the repository (``$XDG_CACHE_HOME/toolhost-e2e``, else
``~/.cache/toolhost-e2e``). The extension is packaged with ``npm run package`` and
installed from the ``.vsix`` with ``--install-extension``, beside a test-only helper
extension (``e2e/helper``) that calls toolhost's exported API; Debian's chromium,
driven by playwright-core (``e2e/drive.js``), clicks the permission notifications and
presses Ctrl+Z as a user would.

The Debian packages it needs (chromium, code-server's build dependencies) are
installed by ``e2e/install-debs.sh`` when the test runs as root, as ``.ci/run`` does;
otherwise, and only where chromium or npm is then missing, it is skipped with the
command to run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.parallel import built_once, install_lock
from tests.vscode.support import (
    EXTENSION,
    ROOT,
    TOOLHOST,
    ensure_node_modules,
    node_env,
    output_of,
    require_node,
    run,
)

# A long file: started first, so that it does not end the parallel run (tests/README.md).
pytestmark = pytest.mark.early

HERE = Path(__file__).resolve().parent
E2E = HERE / "e2e"
CODE_SERVER_VERSION = "4.100.3"

LONG = "".join(f"line {n}\n" for n in range(1, 31))

WORKSPACE = {
    "notes.txt": "saved line\n",
    "app.txt": "hello\nsecond line\n",
    "keep.txt": "keep me as I am\n",
    "config.json": '{"name": "ok"}\n',
    "closed.json": '{"b": 2}\n',
    "later.txt": "waiting\n",
    "draft.txt": "alpha\nbeta\ngamma\n",
    "overlap.txt": "top\nmiddle\nbottom\n",
    "long.txt": LONG,
    "fix.txt": "colour\n",
    "p1.txt": "first file\n",
    "p2.txt": "second file\n",
    "undo-me.txt": "before\n",
    "undo-gone.txt": "deleted by the agent\n",
    "modal.txt": "modal file\n",
    "split.txt": "line 1\nline 2\nline 3\n",
}

USER_SETTINGS = {
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "files.autoSave": "off",
    "editor.formatOnSave": False,
    "files.insertFinalNewline": False,
    "files.trimTrailingWhitespace": False,
    # No toolhost.config: review by default (permissionDefaults) makes edits and commands ask.
    "toolhost.diagnostics.waitMs": 5000,
}


# Logged by VS Code 1.100 itself, not by anything toolhost does wrong: a menu toolbar
# that redraws after its editor has closed (menuService.ts's createActionGroups, from
# toolbar.ts's updateToolbar; the workbench's stack is minified, the method name is not).
UPSTREAM_LOGGED = (("AbstractContextKeyService has been disposed", "createActionGroups"),)


def workbench_errors(driver: dict[str, Any]) -> list[str]:
    """What the page threw, and the errors the workbench logged (the driver's
    ``logged``: how VS Code 1.100's "Converting circular structure to JSON" showed)."""
    logged = [
        text
        for text in driver.get("logged", [])
        if not any(all(part in text for part in known) for known in UPSTREAM_LOGGED)
    ]
    return [*driver.get("errors", []), *logged]


def chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolhost-e2e" / f"code-server-{CODE_SERVER_VERSION}"


@dataclass
class Scenario:
    steps: dict[str, dict[str, Any]]
    driver: dict[str, Any]
    workspace: Path
    shots: Path
    timings: dict[str, float] = field(default_factory=dict)

    def step(self, name: str) -> dict[str, Any]:
        step = self.steps.get(name)
        assert step is not None, f"the helper never reported step {name!r}: {self.describe()}"
        assert step["ok"], f"step {name!r} failed in the extension host:\n{step.get('error')}"
        return step

    def user(self, expect_id: str) -> dict[str, Any]:
        seen = self.driver.get("steps", {}).get(expect_id)
        assert seen is not None, f"the driver never did {expect_id!r}: {self.describe()}"
        assert "error" not in seen, (
            f"the driver failed at {expect_id!r}: {seen['error']} (screenshots in {self.shots})"
        )
        return seen

    def describe(self) -> str:
        return json.dumps({"steps": self.steps, "driver": self.driver}, indent=1)[:6000]


def install_code_server(timings: dict[str, float]) -> Path:
    started = time.monotonic()
    target = cache_dir()
    with install_lock(target):  # the script starts with rm -rf of an unfinished install
        done = run(["bash", str(E2E / "install-code-server.sh"), str(target)], HERE, 900)
    assert done.returncode == 0, f"installing code-server into {target} failed:\n{output_of(done)}"
    timings["install code-server (cached after the first run)"] = time.monotonic() - started
    return target


# What `npm run package` needs from editors/vscode; node_modules is linked, not copied.
PACKAGE_SOURCES = (
    "src",
    "scripts",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    ".vscodeignore",
    "LICENSE",
    "README.md",
    "media",
)


# The three code-server modules test the same build: it is packaged once per run, by
# whichever worker needs it first (npm run package builds the bundled wheel too; 10-20 s).
def package(factory: pytest.TempPathFactory, timings: dict[str, float]) -> tuple[Path, Path]:
    """The .vsix and the helper's, packaged from a copy so that the build leaves the
    checkout as it was."""
    started = time.monotonic()
    folder = built_once(factory, "vscode-package", build_package)
    timings["npm run package (+ helper), or wait for it"] = time.monotonic() - started
    return folder / "toolhost.vsix", folder / "e2e-helper.vsix"


def build_package(tmp: Path) -> None:
    ensure_node_modules()
    source = tmp / "extension-source"
    source.mkdir()
    for name in PACKAGE_SOURCES:
        copy = shutil.copytree if (EXTENSION / name).is_dir() else shutil.copy2
        copy(EXTENSION / name, source / name)
    (source / "node_modules").symlink_to(EXTENSION / "node_modules")
    vsix = tmp / "toolhost.vsix"
    env = {**node_env(), "TOOLHOST_REPO": str(ROOT)}
    done = run(["npm", "run", "package", "--", "-o", str(vsix)], source, 600, env)
    assert done.returncode == 0 and vsix.exists(), f"npm run package failed:\n{output_of(done)}"
    helper = tmp / "e2e-helper.vsix"
    vsce = EXTENSION / "node_modules" / ".bin" / "vsce"
    args = [str(vsce), "package", "--allow-missing-repository", "-o", str(helper)]
    done = run(args, E2E / "helper", 300)
    assert done.returncode == 0, f"packaging the helper extension failed:\n{output_of(done)}"


@dataclass
class Layout:
    """The folders and files of one run, all under the test's temporary folder."""

    tmp: Path

    def __post_init__(self) -> None:
        self.workspace = self.tmp / "ws"
        self.user_data = self.tmp / "user-data"
        self.extensions = self.tmp / "extensions"
        # $TOOLHOST_E2E_SHOTS keeps the screenshots somewhere to look at them.
        self.shots = Path(os.environ.get("TOOLHOST_E2E_SHOTS") or self.tmp / "screenshots")
        self.marker = self.tmp / "marker.jsonl"
        self.control = self.tmp / "control.jsonl"

    def create(self) -> None:
        for folder in (self.workspace, self.user_data / "User", self.extensions):
            folder.mkdir(parents=True)
        self.shots.mkdir(parents=True, exist_ok=True)
        for name, text in WORKSPACE.items():
            (self.workspace / name).write_text(text)
        # code-server's extension host takes PATH from the login shell, not from this
        # process, so the sidecar is named explicitly (the fast tier covers PATH lookup).
        command = {"toolhost.serverCommand": [str(TOOLHOST), "serve"]}
        settings = {**USER_SETTINGS, **command}
        (self.user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=1))
        # A setting the extension host updates (ConfigurationTarget.Global) goes to
        # code-server's remote Machine settings, whose file then hides the User file's
        # machine-overridable values, serverCommand included: name the sidecar there too.
        (self.user_data / "Machine").mkdir(parents=True, exist_ok=True)
        (self.user_data / "Machine" / "settings.json").write_text(json.dumps(command, indent=1))

    def env(self) -> dict[str, str]:
        xdg = self.tmp / "xdg"  # code-server writes into the home directory otherwise
        return {
            **os.environ,
            "XDG_CONFIG_HOME": str(xdg / "config"),
            "XDG_DATA_HOME": str(xdg / "data"),
            "XDG_CACHE_HOME": str(xdg / "cache"),
            "XDG_STATE_HOME": str(xdg / "state"),
            "OPENCODE_CONFIG_DIR": str(self.tmp / "opencode-config"),
            "TOOLHOST_DATA_DIR": str(self.tmp / "toolhost-data"),
            "TOOLHOST_E2E_MARKER": str(self.marker),
            "TOOLHOST_E2E_CONTROL": str(self.control),
            # The network-ask step's loopback server, by a name the sidecar's proxy resolves.
            "TOOLHOST_NETWORK_HOSTS": "files.e2e.test=127.0.0.1",
        }

    def dirs(self) -> list[str]:
        return ["--user-data-dir", str(self.user_data), "--extensions-dir", str(self.extensions)]

    def steps(self) -> dict[str, dict[str, Any]]:
        text = self.marker.read_text() if self.marker.exists() else ""
        events = [json.loads(line) for line in text.splitlines()]
        return {e["name"]: e for e in events if e.get("event") == "step"}


def install_extensions(code_server: Path, layout: Layout, packages: tuple[Path, ...]) -> None:
    binary = code_server / "node_modules" / ".bin" / "code-server"
    for package_file in packages:
        args = [str(binary), *layout.dirs(), "--install-extension", str(package_file)]
        done = subprocess.run(
            args, env=layout.env(), capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"installing {package_file.name} failed:\n{output_of(done)}"


# code-server binds port 0 (the kernel picks a free one, so no other test can take it
# between a check and the bind) and says which in its log.
BIND = ["--bind-addr", "127.0.0.1:0"]
LISTENING = re.compile(r"HTTP server listening on http://127\.0\.0\.1:(\d+)/")


def launch(code_server: Path, layout: Layout) -> tuple[subprocess.Popen[bytes], int]:
    binary = code_server / "node_modules" / ".bin" / "code-server"
    flags = ["--auth", "none", *BIND, "--disable-telemetry"]
    flags += ["--disable-update-check", "--disable-workspace-trust"]
    flags += ["--disable-getting-started-override"]
    with (layout.tmp / "code-server.log").open("w") as log:
        server = subprocess.Popen(
            [str(binary), *flags, *layout.dirs(), str(layout.workspace)],
            env=layout.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the sidecar ends with it
        )
    return server, wait_healthy(layout, server)


def run_driver(code_server: Path, layout: Layout, port: int) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/?folder={layout.workspace}"
    args = [str(E2E / "drive.js"), url, str(layout.marker), str(layout.control), str(layout.shots)]
    env = {
        **layout.env(),
        "NODE_PATH": str(code_server / "pw" / "node_modules"),
        "CHROMIUM": chromium() or "",
    }
    done = subprocess.run(
        ["node", *args], env=env, capture_output=True, text=True, timeout=420, check=False
    )
    (layout.tmp / "driver.json").write_text(done.stdout + "\n--- stderr\n" + done.stderr)
    lines = done.stdout.strip().splitlines()
    try:
        seen = json.loads(lines[-1]) if lines else {}
    except ValueError:
        seen = {}
    assert seen, f"the browser driver printed nothing usable:\n{output_of(done)}"
    return seen


def drive(
    code_server: Path, packages: tuple[Path, ...], tmp: Path, timings: dict[str, float]
) -> Scenario:
    layout = Layout(tmp)
    layout.create()
    started = time.monotonic()
    install_extensions(code_server, layout, packages)
    timings["install the .vsix files"] = time.monotonic() - started
    started = time.monotonic()
    server, port = launch(code_server, layout)
    try:
        seen = run_driver(code_server, layout, port)
    finally:
        end_group(server)
    timings["scenario in the browser"] = time.monotonic() - started
    return Scenario(layout.steps(), seen, layout.workspace, layout.shots, timings)


def wait_healthy(layout: Layout, server: subprocess.Popen[bytes]) -> int:
    """The port code-server listens on, once it answers /healthz there."""
    log = layout.tmp / "code-server.log"
    deadline = time.monotonic() + 60
    port = None
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"code-server exited at start; see {log}")
        if port is None:
            match = LISTENING.search(log.read_text(errors="replace"))
            port = int(match[1]) if match else None
        try:
            if port is not None:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    return port
        except OSError:
            pass
        time.sleep(0.3)
    end_group(server)
    raise AssertionError(f"code-server did not answer /healthz within 60 s; see {log}")


def end_group(server: subprocess.Popen[bytes]) -> None:
    """Ends code-server and everything it started (its own process group), by id."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, sig)
        try:
            server.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def require_debs() -> None:
    """Installs the tier's Debian packages (as root); skips, saying what to run, without."""
    with install_lock(Path("/var/lib/dpkg")):  # one apt-get at a time
        done = run(["bash", str(E2E / "install-debs.sh")], HERE, 900)
    if done.returncode == 3 and chromium() is None:
        pytest.skip(
            f"the real-VS-Code tier needs Debian packages ({done.stdout.strip()}): "
            f"run `sudo bash {E2E / 'install-debs.sh'}`"
        )
    assert done.returncode in (0, 3), f"installing the Debian packages failed:\n{output_of(done)}"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    require_node()
    require_debs()
    tmp = tmp_path_factory.mktemp("vscode-e2e")
    timings: dict[str, float] = {}
    started = time.monotonic()
    code_server = install_code_server(timings)
    vsix, helper = package(tmp_path_factory, timings)
    result = drive(code_server, (vsix, helper), tmp, timings)
    timings["total"] = time.monotonic() - started
    print("\nVS Code e2e timings (s): " + ", ".join(f"{k}: {v:.1f}" for k, v in timings.items()))
    return result


def test_extension_activates_and_starts_the_sidecar(scenario: Scenario) -> None:
    step = scenario.step("activate")
    assert {"listTools", "executeTool"} <= set(step["exports"])
    assert {"pendingReviews", "answerReview", "onDidChangePendingReviews"} <= set(step["exports"])
    assert {"read", "edit", "write", "bash", "lsp"} <= set(step["tools"])


def test_the_tools_are_language_model_tools_that_run_through_the_sidecar(
    scenario: Scenario,
) -> None:
    step = scenario.step("language-model-tools")
    assert {"toolhost_read", "toolhost_edit", "toolhost_bash"} <= set(step["names"])
    assert "1: keep me as I am" in step["text"]


def test_without_the_mcp_api_the_static_tools_carry_when_clauses(scenario: Scenario) -> None:
    """code-server 4.100 is VS Code 1.100, which has only a proposed MCP server API: the
    extension uses the final one (1.101+) alone and runs without it, and its tools carry
    when clauses that keep them offered there (a trusted workspace, no MCP server).

    The clauses are single comparisons with one key the extension sets: 1.100 cannot
    send tools whose `when` combines terms to the extension hosts (vscode.lm.tools was
    empty, and the workbench logged "i is not iterable")."""
    step = scenario.step("language-model-tools")
    assert step["version"].startswith("1.100")
    # 1.100 has a proposed form of the API (a function here); the extension leaves it alone.
    assert step["when"]["toolhost_read"] == "toolhost.staticTools != none"
    assert step["when"]["toolhost_edit"] == "toolhost.staticTools == all"


def test_the_when_clauses_hide_the_static_tools_in_the_real_workbench(scenario: Scenario) -> None:
    """The values the extension sets in Restricted Mode and beside its MCP server, set by
    the helper here: VS Code's own evaluation hides the tools, and they come back."""
    shown = scenario.step("static-tools-hidden")
    assert "toolhost_read" in shown["readOnly"] and "toolhost_grep" in shown["readOnly"]
    assert not {"toolhost_edit", "toolhost_bash", "toolhost_write"} & set(shown["readOnly"])
    assert shown["none"] == []
    assert {"toolhost_read", "toolhost_edit", "toolhost_bash"} <= set(shown["all"])


def test_a_read_through_the_api_serves_the_unsaved_buffer(scenario: Scenario) -> None:
    step = scenario.step("read-unsaved")
    assert step["dirty"] is True
    assert not step["isError"], step["output"]
    assert "1: typed but not saved\n2: saved line" in step["output"]
    assert step["disk"] == "saved line\n"


def test_an_edit_waits_with_the_diff_beside_the_editor_and_whole_button_labels(
    scenario: Scenario,
) -> None:
    user = scenario.user("allow-edit")
    assert user["diffTab"], "the proposed change was not open in a diff editor"
    assert user["diffEditorVisible"]
    assert "hello world" in user["diffModified"]
    assert user["groups"] >= 2, "the diff should open beside the editor, not over it"
    assert user["focusInDiff"] is False, "the diff took the keyboard focus"
    assert scenario.step("edit-allow")["focusKeptOn"].endswith("app.txt")
    assert "toolhost: edit proposes a change to app.txt (+1 −1)" in user["notification"]
    assert user["buttons"] == ["Accept", "Reject", "More…"]
    assert user["cutLabels"] == [], f"labels cut short: {user['cutLabels']}"
    assert user["diffClosed"], "the diff editor stayed open after the answer"
    step = scenario.step("edit-allow")
    assert not step["isError"], step["output"]
    assert step["after"] == {
        "text": "hello world\nsecond line\n",
        "dirty": False,
        "disk": "hello world\nsecond line\n",
    }


def test_the_edit_is_one_undo_step_in_the_editor(scenario: Scenario) -> None:
    scenario.user("undo")
    step = scenario.step("edit-allow")
    assert step["undone"]["text"] == step["before"] == "hello\nsecond line\n"


def test_unsaved_typing_stays_out_of_the_disk_and_one_undo_takes_back_the_agents_part(
    scenario: Scenario,
) -> None:
    scenario.user("type-unsaved")
    scenario.user("accept-merge")
    scenario.user("undo-agent-part")
    step = scenario.step("unsaved-merge")
    assert step["typed"] == {
        "text": "my unsaved line\nalpha\nbeta\ngamma\n",
        "dirty": True,
        "disk": "alpha\nbeta\ngamma\n",
    }
    assert not step["isError"], step["output"]
    assert step["after"] == {
        "text": "my unsaved line\nalpha\nbeta\nGAMMA, longer\n",
        "dirty": True,
        "disk": "alpha\nbeta\nGAMMA, longer\n",
    }, "the disk must get the agent's change and none of the unsaved line"
    assert step["undone"]["text"] == "my unsaved line\nalpha\nbeta\ngamma\n"
    assert step["undone"]["dirty"] is True


def test_saving_after_the_agent_wrote_the_disk_does_not_warn_that_the_file_changed(
    scenario: Scenario,
) -> None:
    user = scenario.user("save-mine")
    assert not any("newer" in toast for toast in user["toasts"]), user["toasts"]
    step = scenario.step("unsaved-merge")
    assert step["saved"] == {
        "text": step["undone"]["text"],
        "dirty": False,
        "disk": step["undone"]["text"],
    }


def test_an_edit_over_unsaved_lines_offers_the_three_choices(scenario: Scenario) -> None:
    user = scenario.user("overlap-choice")
    assert user["buttons"] == ["Apply in editor only", "Save my changes too", "Reject"]
    assert user["cutLabels"] == [], f"labels cut short: {user['cutLabels']}"
    assert "overlaps lines you changed and have not saved" in user["notification"]
    step = scenario.step("overlap")
    assert not step["isError"], step["output"]
    assert step["buffer"] == "top\nmiddle, typed by me and the agent\nbottom\n"
    assert step["dirty"] is True
    assert step["disk"] == "top\nmiddle\nbottom\n", "apply in editor only leaves the disk alone"


def test_per_hunk_review_lands_one_hunk_and_the_result_says_which(scenario: Scenario) -> None:
    user = scenario.user("hunks")
    assert user["rejectedInPlace"], "Alt+N did not take the change out of the proposed side"
    assert any("Change 1 of 2" in row for row in user["rows"]), user["rows"]
    step = scenario.step("per-hunk")
    assert step["hunks"] == ["long.txt#1", "long.txt#2"]
    assert not step["isError"], step["output"]
    assert "Applied: long.txt#1" in step["output"]
    assert "Not applied: long.txt#2" in step["output"]
    assert step["disk"] == LONG.replace("line 4\n", "line four, by the agent\n")


def test_the_person_corrects_the_proposal_in_the_diff_before_accepting(scenario: Scenario) -> None:
    scenario.user("correct")
    step = scenario.step("correct-proposal")
    assert not step["isError"], step["output"]
    assert step["disk"] == "color (by hand)\n"
    assert "(by hand)" in step["output"], "the model should be told what the person changed"


def test_per_file_review_of_a_two_file_patch(scenario: Scenario) -> None:
    user = scenario.user("files")
    rows = " | ".join(user["rows"])
    assert "p1.txt" in rows and "p2.txt" in rows, rows
    step = scenario.step("per-file")
    assert not step["isError"], step["output"]
    assert step["p1"] == "first file, changed\n"
    assert step["p2"] == "second file\n"
    assert "p2.txt" in step["output"]


def test_always_names_what_it_covers_is_kept_in_the_project_and_can_be_revoked(
    scenario: Scenario,
) -> None:
    user = scenario.user("always")
    first_choices = user["choices"][0]
    assert any("Always allow commands starting “printf”" in c for c in first_choices), first_choices
    assert [c.split("\n")[0] for c in user["choices"][1]][:3] == [
        "For this session",
        "For this project",
        "For all my projects",
    ], user["choices"][1]
    step = scenario.step("always-project")
    assert step["saved"] == {"bash": {"printf *": "allow"}}
    assert step["askedAgain"] is False, "an allowed command was asked about again"
    assert "again" in step["second"]
    rules = scenario.user("rules")
    assert any("commands starting “printf”" in row for row in rules["listed"]), rules["listed"]
    assert step["afterRevoke"].get("bash", {}).get("printf *") is None
    assert step["fileLeft"] is False, "the opencode.json toolhost created is removed with its rule"


def test_reject_with_a_reason_reaches_the_model(scenario: Scenario) -> None:
    scenario.user("reason")
    step = scenario.step("reject-reason")
    assert step["error"] == "permission_rejected"
    assert "not here, use the build folder" in step["output"]
    assert step["made"] is False


def test_reject_leaves_the_file_untouched(scenario: Scenario) -> None:
    user = scenario.user("reject-edit")
    assert user["clicked"] == "Reject"
    step = scenario.step("edit-reject")
    assert step["isError"] and step["kind"] == "permission_rejected", step
    assert step["disk"] == "keep me as I am\n"
    assert step["buffer"] in (None, "keep me as I am\n")


def test_a_space_typed_at_the_modal_dialog_answers_nothing_and_opens_no_second_diff(
    scenario: Scenario,
) -> None:
    user = scenario.user("modal-space")
    assert user["pressed"] == "Space"
    step = scenario.step("modal-space")
    assert step["pending"] is True, step  # the focused button only showed the diff
    assert step["unchanged"] is True, step
    assert step["diffTabs"] == 1, step
    # The typing that went on stayed in the person's editor, not in the agent's proposal.
    assert step["proposal"] == "MODAL file\n", step


def test_typing_in_the_right_of_two_groups_the_diff_opens_in_the_other_and_its_note_shows_whole(
    scenario: Scenario,
) -> None:
    user = scenario.user("two-groups")
    step = scenario.step("two-groups")
    assert step["groupsBefore"] == 2
    assert step["groupsDuring"] == 2, "the review opened a third, narrow column"
    assert user["diffEditorVisible"] and user["lineShown"], user
    assert user["focusInDiff"] is False, "the diff took the keyboard focus"
    assert "1/1 Alt+Y/N" in user["note"], user
    assert user["pastEdge"] == 0, f"the changed line or its note is cut off: {user}"


def test_a_fetch_through_the_language_model_tools_is_asked_once_in_toolhosts_review(
    scenario: Scenario,
) -> None:
    """code-server has no Copilot, but vscode.lm.invokeTool runs the same path outside a
    chat: VS Code shows a tool's confirmation as a modal dialog there (its focused "Yes"
    is pressed by a Space). toolhost's tools ask nothing of VS Code; the fetch waits in
    toolhost's review, which a Space does not answer."""
    assert scenario.user("lm-fetch-space")["dialog"] == []
    step = scenario.step("lm-fetch-asks-once")
    assert step["pendingAfterSpace"] is True, step
    assert "rejected permission" in step["text"], step
    toast = scenario.user("lm-fetch-reject")
    assert toast["buttons"] == ["Allow", "Reject", "More…"], toast
    assert "127.0.0.1:9/lm" in toast["notification"], toast


def test_a_command_waits_for_an_answer_by_default(scenario: Scenario) -> None:
    user = scenario.user("allow-bash")
    assert user["buttons"] == ["Allow", "Reject", "More…"]
    assert user["cutLabels"] == []
    assert "“Always” would allow commands starting “echo”" in user["notification"]
    step = scenario.step("bash-waits")
    assert step["waitedWithoutAnswer"], "the command ran before anyone answered"
    assert not step["isError"], step["output"]
    assert step["made"]


def test_stop_in_the_status_bar_ends_a_running_sleep_with_no_survivors(scenario: Scenario) -> None:
    user = scenario.user("stop-call")
    assert "bash: started" in user["statusText"]
    step = scenario.step("stop-sleep")
    assert step["before"] == 2
    assert step["survivors"] == []
    assert step["isError"] and step["error"] == "cancelled", step["output"]
    assert step["stoppedBy"] == "user", step["output"]


def test_a_review_left_unanswered_for_a_minute_is_still_answerable(scenario: Scenario) -> None:
    assert scenario.user("dismiss-later")["dismissed"]
    asked = scenario.step("later-asked")
    assert asked["pending"], "dismissing the notification or closing the diff answered the review"
    assert asked["disk"] == "waiting\n"
    reopened = scenario.user("answer-later")
    assert reopened["diffTab"], "the status item did not reopen the diff"
    step = scenario.step("later-answered")
    assert step["stillPending"]
    assert step["waitedMs"] >= 60000
    assert not step["isError"], step["output"]
    assert step["disk"] == "answered after a minute\n"


def test_diagnostics_from_vscodes_json_language_server_reach_the_output(scenario: Scenario) -> None:
    scenario.user("allow-json-edit")
    step = scenario.step("diagnostics")
    assert step["languageServerReady"], "VS Code's JSON language server never reported"
    assert not step["isError"], step["output"]
    assert step["disk"] == '{"name": "ok",,}\n'
    assert '<diagnostics file="' in step["output"], (step["output"], step["vscodeDiagnostics"])
    assert "config.json" in step["output"]
    assert any(uri.endswith("config.json") for uri in step["metadataDiagnostics"])


def test_diagnostics_for_a_file_no_editor_shows(scenario: Scenario) -> None:
    scenario.user("allow-closed-json")
    step = scenario.step("diagnostics-background")
    assert not step["isError"], step["output"]
    assert step["disk"] == '{"b",,: 2}\n'
    assert '<diagnostics file="' in step["output"] and "closed.json" in step["output"], step[
        "output"
    ]


def test_run_tool_from_the_command_palette(scenario: Scenario) -> None:
    user = scenario.user("palette-run")
    assert "read" in user["picks"] and "edit" in user["picks"], user["picks"]
    assert user["template"] == '{"filePath":""}'
    step = scenario.step("palette")
    assert step["uri"].startswith("toolhost-result:")
    assert "1: typed but not saved" in step["text"], step["text"]


def test_undo_last_agent_turn_from_the_palette_shows_the_dry_run_and_puts_it_back(
    scenario: Scenario,
) -> None:
    step = scenario.step("undo")
    assert step["changed"] == {"me": "agent\n", "gone": True}, step
    user = scenario.user("undo-palette")
    assert "put back: undo-me.txt" in user["dialog"], user["dialog"]
    assert "put back: undo-gone.txt" in user["dialog"], user["dialog"]
    assert user["clicked"] == "Undo"
    assert step["me"] == "before\n" and step["gone"] == "deleted by the agent\n"
    assert (scenario.shots / "undo-dry-run.png").is_file()


def test_a_commands_connection_to_an_unlisted_host_waits_for_allow_in_a_notification(
    scenario: Scenario,
) -> None:
    user = scenario.user("network-allow")
    assert user["buttons"] == ["Allow", "Reject", "More…"], user
    assert "bash wants to connect to “files.e2e.test” (port" in user["notification"], user
    assert "“Always” would allow network access to files.e2e.test." in user["notification"]
    step = scenario.step("network-ask")
    assert not step["isError"], step["output"]
    assert "hello /asked" in step["output"], step["output"]
    assert any(r.startswith("files.e2e.test:") for r in step["network"]["reached"]), step


def test_the_browser_saw_no_workbench_errors(scenario: Scenario) -> None:
    assert not workbench_errors(scenario.driver)
