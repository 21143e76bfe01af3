"""Finding the ``rg`` binary: beside the running interpreter first, then on PATH."""

from __future__ import annotations

import shutil
import sys
from functools import lru_cache
from pathlib import Path

from tools.errors import ToolError

INSTALL_HINT = (
    "ripgrep (rg) was not found next to the Python interpreter or on PATH. "
    "Install it with `pip install ripgrep==14.1.0` in toolhost's environment, "
    "or from your system's package manager."
)


@lru_cache(maxsize=1)
def _find() -> str | None:
    beside = Path(sys.executable).parent / ("rg.exe" if sys.platform == "win32" else "rg")
    if beside.is_file():
        return str(beside)
    return shutil.which("rg")


def rg_path() -> str:
    found = _find()
    if found is None:
        raise ToolError(INSTALL_HINT)
    return found
