"""What a connection knows after ``initialize``: options, the ToolHost, defaults.

Built on the first call that needs it (normally the ``initialized`` notification),
not inside ``initialize``: it loads the tool framework and the built-in tools,
which would otherwise delay the ``initialize`` answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.options import InitOptions, parse_options
from tools.host import ToolHost, new_id

log = logging.getLogger("toolhost.server")


@dataclass
class ServerState:
    options: InitOptions
    host: ToolHost
    session_id: str  # for calls that name no session

    @classmethod
    def build(cls, raw_options: Any, worktree: Path) -> ServerState:
        options, problems = parse_options(raw_options)
        for problem in problems:
            log.warning("%s", problem)
        host = ToolHost(worktree, config=options.config)
        log.info("serving %s (%d tools)", worktree, len(host.registry.tools))
        return cls(options, host, options.session_id or new_id("ses"))
