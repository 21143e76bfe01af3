"""The bubblewrap command line for a plan: the engine where Landlock is missing.

The root is bound read-only, then each writable path read-write over it, then each
protected path read-only again (and its parents bound onto themselves, so they
cannot be renamed), denied and hidden paths covered with an empty tmpfs (or
/dev/null for a file). ``--dev /dev`` gives a fresh /dev with the usual devices and
a private /dev/shm. ``--unshare-net`` for ``network: deny``. Later options win in
bubblewrap, so the order matters.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tools.bash.sandbox.plan import Plan


def argv(plan: Plan, command: Sequence[str], cwd: str) -> list[str]:
    assert plan.bwrap is not None
    args = [plan.bwrap, "--ro-bind", "/", "/", "--dev", "/dev"]
    for path in plan.writable:
        args += ["--bind", path, path]
    for path in plan.pinned:
        args += ["--bind", path, path]
    for path in plan.protected:
        args += ["--ro-bind", path, path]
    for path in [*plan.read_denied, *plan.hidden]:
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    if plan.netns:
        args.append("--unshare-net")
    if os.getuid() == 0:
        args += ["--cap-drop", "ALL"]  # root keeps no capability to undo the mounts
    args += ["--die-with-parent", "--chdir", cwd, "--", *command]
    return args
