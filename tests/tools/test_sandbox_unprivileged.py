"""The sandbox as the users will run it: an unprivileged user, no capabilities.

The suite runs as root here; this test drops to ``nobody`` with ``setpriv`` (no
capabilities, no groups) and runs the real supervisor and a real command there,
using only the standard library (the supervisor needs nothing else). Where
unprivileged user namespaces are off, it checks that the plan says so instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.bash.sandbox import landlock

TOOLS = Path(__file__).resolve().parents[2] / "tools"
NOBODY = 65534

SCRIPT = """
import asyncio, json, os, sys, types
package = types.ModuleType("tools")
package.__path__ = [sys.argv[1]]
sys.modules["tools"] = package
from pathlib import Path
from tools.bash.sandbox import client, plan

async def main(root, outside, command):
    supervisor = client.supervisor()
    policy = plan.Policy(
        network="deny",
        writable=(root,),
        protected=(os.path.join(root, ".git", "config"),),
    )
    chosen = plan.decide(policy, supervisor.support)
    read_end, write_end = os.pipe()
    _, started = await supervisor.spawn(
        ["/bin/bash", "-c", command], cwd=Path(root), env=dict(os.environ), plan=chosen,
        stdout=write_end,
    )
    os.close(write_end)
    exited = await started.exited
    output = b""
    while chunk := os.read(read_end, 65536):
        output += chunk
    print(json.dumps({
        "uid": os.getuid(), "support": supervisor.support.to_json(), "plan": chosen.summary(),
        "status": exited.status, "output": output.decode(),
    }))

asyncio.run(main(*sys.argv[2:]))
"""

COMMAND = (
    "id -u; echo in > inside.txt && echo wrote-inside; "
    "echo pwned > {outside}/marker; echo x >> .git/config; "
    "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9), timeout=1)' "
    "2>&1 | tail -1"
)


def nobody_python() -> str | None:
    """A Python that ``nobody`` may run, and that can start itself again (the venv's
    interpreter may live in root's home)."""
    starts_itself = "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)"
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if not candidate or not os.path.exists(candidate):
            continue
        done = subprocess.run(
            [*as_nobody(), candidate, "-I", "-S", "-c", starts_itself], capture_output=True
        )
        if done.returncode == 0:
            return candidate
    return None


def as_nobody() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="toolhost-unprivileged-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become an unprivileged user")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is missing")
@pytest.mark.skipif(landlock.abi_version() < landlock.MIN_ABI, reason="no Landlock ABI 3+")
def test_an_unprivileged_user_gets_the_whole_sandbox(scratch: Path) -> None:
    python = nobody_python()
    if python is None or not os.access(TOOLS, os.R_OK | os.X_OK):
        pytest.skip("no Python (or no checkout) that the unprivileged user can read")
    root, outside = scratch / "project", scratch / "outside"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    outside.mkdir()
    (outside / "marker").write_text("keep me\n")
    (scratch / "run.py").write_text(SCRIPT)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(scratch)], check=True)
    done = subprocess.run(
        [
            *as_nobody(),
            "--inh-caps=-all",
            python,
            "-I",
            "-S",
            str(scratch / "run.py"),
            str(TOOLS),
            str(root),
            str(outside),
            COMMAND.format(outside=outside),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=scratch,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["uid"] == NOBODY
    lines = report["output"].splitlines()
    assert lines[0] == str(NOBODY)  # the command runs as the user, not as root
    assert "wrote-inside" in lines
    assert (outside / "marker").read_text() == "keep me\n"  # stopped by Landlock
    assert (root / ".git" / "config").read_text() == "[core]\n"
    plan = report["plan"]
    assert plan["engine"] == "landlock"
    assert "fs-write" in plan["enforced"]
    if report["support"]["userns"]:
        assert {"protected", "network"} <= set(plan["enforced"])
        assert "Network is unreachable" in report["output"]
    else:  # degraded, and saying so
        assert any("protected paths" in m for m in plan.get("missing", []))
