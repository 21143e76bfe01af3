"""A floor for the round-trip benchmark's ``read``: the echo server doing a read's file work.

``bench/baseline_echo.py`` answers with the request's params and touches no file. This
one, for a ``tools/execute`` whose ``args.filePath`` names a file, also makes the system
calls toolhost's ``read`` of a small file makes (``stat``, an open that follows no link,
``fstat``, ``read``, ``close``) and answers with an object of the same shape as toolhost's
result (numbered lines, footer, metadata), and nothing else: no checks, no session, no
permission rules. ``roundtrip.py`` prints it beside the target row, as the cost a read
has before any of toolhost's own work.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from baseline_echo import serve


def read_result(path: str) -> dict[str, object]:
    os.stat(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        lines = os.read(fd, size + 1).decode("utf-8").splitlines()
    finally:
        os.close(fd)
    numbered = "\n".join(f"{n}: {line}" for n, line in enumerate(lines, 1))
    footer = f"(End of file - total {len(lines)} lines)"
    return {
        "title": os.path.basename(path),
        "output": f"<path>{path}</path>\n<type>file</type>\n<content>\n{numbered}\n\n"
        f"{footer}\n</content>",
        "metadata": {"preview": "\n".join(lines[:20]), "truncated": False, "loaded": []},
        "attachments": [],
        "isError": False,
    }


def answer(params: Any) -> Any:
    """A read's result for a ``tools/execute`` naming a file; else the params, echoed."""
    args = params.get("args") if isinstance(params, dict) else None
    path = args.get("filePath") if isinstance(args, dict) else None
    return read_result(path) if isinstance(path, str) else params


if __name__ == "__main__":
    asyncio.run(serve(answer))
