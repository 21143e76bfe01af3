"""One command's stopped calls (``notify``'s filter), served by the supervisor.

Each call is first shown to the capture (``capture``: what it is about to change is
kept, when the command's changes are kept), then to ``creations`` (a new name in a
guarded folder is made by the supervisor, or refused); a call neither answered goes on
as the command made it. Whatever goes wrong here, the call is answered: a command is
never left stopped, and a call the supervisor failed to make is let go on, which the
kernel refuses in a guarded folder.

Standard library only: the supervisor imports it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tools.bash.sandbox.capture import Recorder
from tools.bash.sandbox.creations import Creations
from tools.bash.sandbox.notify import Listener


class Stops:
    def __init__(
        self, listener_fd: int, capture: dict[str, Any] | None, creations: dict[str, Any] | None
    ) -> None:
        self.listener = Listener(listener_fd)
        self.recorder: Recorder | None = None
        self.creations = Creations(self.listener, **creations) if creations else None
        if capture is not None:
            try:
                self.recorder = Recorder(capture)
            except BaseException:
                self.listener.close()
                raise

    def fileno(self) -> int:
        return self.listener.fd

    @property
    def refused(self) -> list[dict[str, str]]:
        return self.creations.refused if self.creations is not None else []

    def serve(self) -> bool:
        """Answer one stopped call; False when the command's processes are all gone."""
        try:
            notification = self.listener.receive()
        except OSError:
            return False
        if notification is None:
            return not self.listener.orphaned()
        settled = False
        try:
            if self.recorder is not None:
                self.recorder.record(notification)
            if self.creations is not None:
                settled = self.creations.settle(notification)
        except Exception:  # let it go on: the kernel still refuses a new name
            settled = False
        finally:
            if not settled:
                self.listener.resume(notification.id)
        return True

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        with contextlib.suppress(OSError):
            self.listener.close()
