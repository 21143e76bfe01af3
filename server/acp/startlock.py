"""One start at a time of the same agent for the same HOME.

An ACP client may open two connections at once (codecompanion.nvim does), so two
copies of the agent start together.  On its first run an agent sets up its own state
under HOME, and two doing it at once break each other: OpenCode 1.18's two first
starts both create its SQLite database, and one exits with "database is locked" (or a
failed ``CREATE TABLE``).  So each ``toolhost acp`` takes an exclusive ``flock`` keyed
by the agent's program and its HOME (and XDG folders) before it starts the agent, and
lets go once the agent has answered ``initialize`` (it has set itself up by then),
exited, or ``timeout`` seconds have passed.  A second connection therefore waits for
the first agent's ``initialize``, about a second.

The lock files live in ``$TMPDIR/toolhost-acp-starts-<uid>/`` (0700), one of toolhost's
own folders that no tool may reach (``tools.config.dirs.relay_runtime_patterns``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

log = logging.getLogger("toolhost.acp")

POLL_SECONDS = 0.05
KEYED_BY = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "CODEX_HOME")


def lock_path(argv: list[str], env: dict[str, str]) -> Path:
    """The lock file of this agent program under this HOME."""
    found = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    program = os.path.realpath(found or argv[0]) if argv else ""
    key = "\0".join([program, *(env.get(name, "") for name in KEYED_BY)])
    digest = hashlib.sha256(key.encode(errors="surrogateescape")).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / f"toolhost-acp-starts-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid() or folder.is_symlink():
        raise OSError(f"{folder} is not this user's own folder")
    return folder / f"{digest}.lock"


class StartLock:
    """Held from just before the agent starts until it has answered ``initialize``."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv = argv
        self.env = env
        self._handle: int | None = None
        self._expiry: asyncio.TimerHandle | None = None

    async def acquire(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) for other starts to finish, then hold the
        lock for at most ``timeout`` seconds.  Never fails: a lock that cannot be had in
        time, or made at all, is logged and the agent starts anyway."""
        try:
            path = lock_path(self.argv, self.env)
            handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as error:
            log.warning("cannot serialise the agent's start: %s", error)
            return
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log.warning(
                        "another start of %s has not finished in %g s; starting anyway",
                        self.argv[0],
                        timeout,
                    )
                    os.close(handle)
                    return
                if not waited:
                    log.info("waiting for another start of %s under this HOME", self.argv[0])
                    waited = True
                await asyncio.sleep(POLL_SECONDS)
        self._handle = handle
        self._expiry = asyncio.get_running_loop().call_later(timeout, self.release)

    def release(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if self._handle is not None:
            with contextlib.suppress(OSError):
                os.close(self._handle)  # closing the only descriptor drops the flock
            self._handle = None
