"""What each program that runs another program starts: the walker's per-program handlers.

A handler (``handler.py``) gets a wrapper's words and returns the words of the program
it starts (none when it starts none) and the state that program runs in. Options are
read from a getopt-like spec (``options.py``), so an option's value is never mistaken
for the program; anything a spec does not know makes the command unknown. The
handlers are grouped by family, one module each; ``HANDLERS`` is all of them.
"""

from __future__ import annotations

from tools.bash.programs import (
    bash_builtins,
    env,
    per_item,
    shell_code,
    unfollowed,
    users,
    wrappers,
)
from tools.bash.programs.handler import Handler

# The families name disjoint programs, so their order here does not matter.
HANDLERS: dict[str, Handler] = {
    **wrappers.HANDLERS,
    **users.HANDLERS,
    **env.HANDLERS,
    **shell_code.HANDLERS,
    **per_item.HANDLERS,
    **bash_builtins.HANDLERS,
    **unfollowed.HANDLERS,
}
