"""The sandbox keys in both config formats, and ``toolhost doctor`` (contract E).

opencode.json: ``"sandbox": {"mode", "network", "writable", "caches", "hidden"}``;
tools.yaml: the same under the bash entry's ``sandbox:``. Mistakes name the file,
the line and the key, like every other key.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from server import doctor
from tools.bash.sandbox import landlock
from tools.bash.sandbox.probe import SIMULATE_VAR
from tools.config.effective import SandboxSettings
from tools.config.files import load_config

TOOLHOST = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "toolhost"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def global_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "global"
    path.mkdir()
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(path))
    return path


def test_opencode_json_sets_the_sandbox(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / "opencode.json",
        json.dumps(
            {
                "sandbox": {
                    "mode": "required",
                    "network": "deny",
                    "writable": ["~/data", "/srv/x/"],
                    "caches": [],
                }
            }
        ),
    )
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert loaded.config.sandbox == SandboxSettings(
        mode="required",
        network="deny",
        writable=(str(Path.home() / "data"), "/srv/x"),
        caches=(),
        hidden=None,
    )


def test_tools_yaml_sets_the_sandbox_of_the_bash_entry(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / ".opencode" / "tools.yaml",
        "tools:\n  - name: bash\n    sandbox:\n      mode: off\n      network: deny\n"
        "      writable: [/srv/y]\n",
    )
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert loaded.config.sandbox.mode == "off"
    assert loaded.config.sandbox.network == "deny"
    assert loaded.config.sandbox.writable == ("/srv/y",)


def test_later_sources_win_and_writable_adds_up(worktree: Path, global_dir: Path) -> None:
    write(global_dir / "opencode.json", '{"sandbox": {"network": "deny", "writable": ["/a"]}}')
    write(worktree / "opencode.json", '{"sandbox": {"mode": "required", "writable": ["/b"]}}')
    settings = load_config(worktree).config.sandbox
    assert (settings.mode, settings.network, settings.writable) == (
        "required",
        "deny",
        ("/a", "/b"),
    )


@pytest.mark.parametrize(
    ("name", "text", "line", "key", "message"),
    [
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "mode": "strict"\n  }\n}',
            3,
            "sandbox.mode",
            'expected one of auto, required, off, got "strict"',
        ),
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "network": "local"\n  }\n}',
            3,
            "sandbox.network",
            'expected one of allow, deny, or {"allow": [...], "deny": [...]}, got "local"',
        ),
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "netwrok": "deny"\n  }\n}',
            3,
            "sandbox.netwrok",
            "unknown key (expected one of mode, network, writable, caches, hidden, repositories)",
        ),
        (
            "opencode.json",
            '{\n  "sandbox": {\n    "writable": [\n      "data"\n    ]\n  }\n}',
            4,
            "sandbox.writable[0]",
            'expected an absolute path (or one starting with ~ or $HOME), got "data"',
        ),
        (
            "opencode.json",
            '{\n  "sandbox": "on"\n}',
            2,
            "sandbox",
            "expected an object with mode, network, writable, caches, hidden or repositories, "
            'got "on"',
        ),
        (
            ".opencode/tools.yaml",
            "tools:\n  - name: bash\n    sandbox:\n      mode: strict\n",
            4,
            "tools[0].sandbox.mode",
            'expected one of auto, required, off, got "strict"',
        ),
        (
            ".opencode/tools.yaml",
            "tools:\n  - name: bash\n    sandbox:\n      netwrok: deny\n",
            4,
            "tools[0].sandbox.netwrok",
            "unknown key (expected one of mode, network, writable, caches, hidden, repositories)",
        ),
        (
            ".opencode/tools.yaml",
            "tools:\n  - name: bash\n    sandbox:\n      caches:\n        - cache\n",
            5,
            "tools[0].sandbox.caches[0]",
            'expected an absolute path (or one starting with ~ or $HOME), got "cache"',
        ),
        (
            ".opencode/tools.yaml",
            "tools:\n  - name: read\n    sandbox:\n      mode: off\n",
            3,
            "tools[0].sandbox",
            "a sandbox can only be set for the bash tool",
        ),
    ],
)
def test_sandbox_mistakes_name_file_line_and_key(
    worktree: Path, global_dir: Path, name: str, text: str, line: int, key: str, message: str
) -> None:
    path = write(worktree / name, text)
    (problem,) = load_config(worktree).problems
    assert (problem.file, problem.line, problem.key) == (path, line, key)
    assert problem.message == message
    assert str(problem) == f"{path}:{line}: {key}: {message}"


def test_a_broken_sandbox_key_fails_closed(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.json", '{"sandbox": {"mode": "strict"}}')
    config = load_config(worktree).config
    assert config.failing_closed  # edits and commands ask until it is fixed


# ---------------------------------------------------------------- toolhost doctor

needs_landlock = pytest.mark.skipif(
    landlock.abi_version() < landlock.MIN_ABI, reason="this kernel has no Landlock ABI 3+"
)


def doctor_json(cwd: Path, **env: str) -> tuple[int, dict[str, dict[str, object]]]:
    done = subprocess.run(
        [str(TOOLHOST), "doctor", "--json", "--cwd", str(cwd)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    checks = json.loads(done.stdout)["checks"]
    for check in checks:
        assert set(check) == {"name", "ok", "detail"}
    return done.returncode, {c["name"]: c for c in checks}


@needs_landlock
def test_doctor_says_what_the_kernel_enforces(worktree: Path, global_dir: Path) -> None:
    _, checks = doctor_json(worktree)
    sandbox = checks["sandbox"]
    assert sandbox["ok"] is True
    assert str(sandbox["detail"]).startswith("commands run under landlock (mode auto")
    assert "fs-write" in str(sandbox["detail"])
    assert checks["landlock"]["ok"] is True
    assert checks["config"]["ok"] is True


def test_doctor_says_when_commands_run_unsandboxed(worktree: Path, global_dir: Path) -> None:
    code, checks = doctor_json(worktree, **{SIMULATE_VAR: "none"})
    assert code == 1
    assert checks["sandbox"]["ok"] is False
    assert "UNSANDBOXED" in str(checks["sandbox"]["detail"])
    assert checks["sandbox simulation"]["ok"] is False


def test_doctor_says_required_will_refuse(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.json", '{"sandbox": {"mode": "required"}}')
    code, checks = doctor_json(worktree, **{SIMULATE_VAR: "none"})
    assert code == 1
    assert "every command will be refused" in str(checks["sandbox"]["detail"])


def test_doctor_reports_a_broken_config(worktree: Path, global_dir: Path) -> None:
    path = write(worktree / "opencode.json", '{"sandbox": {"mode": "strict"}}')
    code, checks = doctor_json(worktree)
    assert code == 1
    assert checks["config"]["ok"] is False
    assert f"{path}:1: sandbox.mode" in str(checks["config"]["detail"])


def test_a_check_is_added_without_touching_the_command_line(worktree: Path) -> None:
    @doctor.check
    def extra(d: doctor.Doctor) -> list[doctor.Check]:
        return [doctor.Check("extra", True, f"saw {d.worktree.name}")]

    try:
        found = {c.name: c for c in doctor.run(worktree)}
        assert found["extra"] == doctor.Check("extra", True, "saw project")
    finally:
        doctor.CHECKS.remove(extra)
