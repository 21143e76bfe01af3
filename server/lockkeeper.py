"""The running sidecar's own lock file: written when it listens, completed after
``initialize``, removed when it exits (``server.lockfile`` is the file format)."""

from __future__ import annotations

import atexit
import logging
import os
from dataclasses import replace
from pathlib import Path

from server import lockfile
from server.lockfile import LockInfo, Transport

log = logging.getLogger("toolhost.attach")


class LockKeeper:
    """Keeps one sidecar's lock file in step with what it knows."""

    def __init__(self, token: str, transport: Transport) -> None:
        self.token = token
        self.transport = transport
        self.info: LockInfo | None = None
        self.path: Path | None = None

    def listening(
        self, host: str | None = None, port: int | None = None, *, socket: str | None = None
    ) -> None:
        """Write the lock file (the first call; later addresses are the same socket's)."""
        if self.info is not None:
            return
        self.info = LockInfo(
            token=self.token,
            transport=self.transport,
            workspace_folders=(os.getcwd(),),
            host=host,
            port=port,
            socket=socket,
        )
        self._write()
        atexit.register(self.remove)

    def initialized(self, folders: list[Path], editor: str | None) -> None:
        """Rewrite the file with the client's workspace folders and editor name."""
        if self.info is None:
            return
        self.info = replace(
            self.info,
            workspace_folders=tuple(str(f) for f in folders) or self.info.workspace_folders,
            editor=editor or "unknown",
        )
        self._write()

    def remove(self) -> None:
        if self.path is not None:
            lockfile.remove(self.path)
            self.path = None

    def _write(self) -> None:
        assert self.info is not None
        first = self.path is None
        try:
            self.path = lockfile.write(self.info)
        except OSError as error:  # then nobody can attach: say so, keep serving
            log.error("could not write the lock file: %s", error)
            return
        # Said once: the rewrite after initialize is the same file (the editor's log
        # showed the line twice).
        log.log(logging.INFO if first else logging.DEBUG, "lock file: %s", self.path)
