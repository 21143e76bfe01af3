"""The parallel run keeps a file's tests in one worker and starts the ``early`` files first.

A pytest or pytest-xdist upgrade can break either without failing anything (pytest 9.2
silently ended ``--dist loadgroup``'s grouping): the suite would then set up a module's
heavy fixture in every worker (four code-servers at once). So a small suite runs here
with the options and hooks of this one, and each test says which worker ran it.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEST_FILE = """
import os, time, pytest
{mark}
@pytest.mark.parametrize("n", range(4))
def test_records(n):
    time.sleep(0.05)
    with open(os.environ["RECORD"], "a") as log:
        log.write(f"{{os.environ['PYTEST_XDIST_WORKER']}} {{__name__}}\\n")
"""


def test_a_file_stays_in_one_worker_and_early_files_start_first(tmp_path: Path) -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    ini = options["ini_options"]
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text(
        f"[pytest]\naddopts = {ini['addopts']}\nmarkers =\n    {ini['markers'][0]}\n"
    )
    (suite / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems, pytest_xdist_auto_num_workers\n"
    )
    for name in ("test_a", "test_b", "test_c"):
        (suite / f"{name}.py").write_text(TEST_FILE.format(mark=""))
    (suite / "test_z.py").write_text(TEST_FILE.format(mark="pytestmark = pytest.mark.early"))
    record = tmp_path / "record.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", str(suite)],
        cwd=suite,
        env={"PYTHONPATH": str(ROOT), "RECORD": str(record), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    runs = [line.split() for line in record.read_text().splitlines()]
    workers = {worker for worker, _ in runs}
    assert len(workers) > 1, f"the suite ran in one worker: {runs}"
    for module in ("test_a", "test_b", "test_c", "test_z"):
        ran_in = {worker for worker, name in runs if name == module}
        assert len(ran_in) == 1, f"{module}'s tests ran in {sorted(ran_in)}: {runs}"
    (z_worker,) = {worker for worker, name in runs if name == "test_z"}
    first = next(name for worker, name in runs if worker == z_worker)
    assert first == "test_z", f"the early file was not its worker's first: {runs}"
