"""Which shell runs a bash call's line, its command line, and the environment it gets."""

from __future__ import annotations

import os
import shutil

POSIX_SHELLS = frozenset({"bash", "zsh", "sh", "dash"})  # fish, nu & co. don't speak POSIX sh

# Added to the inherited environment: nothing may wait for a terminal, since stdin
# is /dev/null and nobody is there to answer.
#   PAGER, GIT_PAGER, MANPAGER=cat  git log, man, systemctl... print instead of paging
#   GIT_TERMINAL_PROMPT=0           git fails instead of prompting for credentials
#   GIT_EDITOR=true                 commit/merge/rebase keep the prepared message
#                                   instead of opening an editor that would hang
#   TERM=dumb (only if unset)       programs that look at TERM assume no cursor control
# NO_COLOR is not set: output is a pipe, so most programs print no colour already,
# and forcing it would change the output of those that ask for colour on purpose.
NONINTERACTIVE_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
}


def pick_shell() -> str:
    """$SHELL when it is a POSIX-style shell, else bash, else sh."""
    preferred = os.environ.get("SHELL", "")
    if os.path.basename(preferred) in POSIX_SHELLS and os.access(preferred, os.X_OK):
        return preferred
    for candidate in ("/bin/bash", "/bin/sh"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


def shell_argv(command: str, shell: str | None = None) -> list[str]:
    """Run ``command`` without the user's startup files (they may prompt or print)."""
    shell = shell or pick_shell()
    name = os.path.basename(shell)
    if name == "bash":
        return [shell, "--noprofile", "--norc", "-c", command]
    if name == "zsh":
        return [shell, "-f", "-c", command]
    return [shell, "-c", command]


def shell_env() -> dict[str, str]:
    """The inherited environment, made non-interactive."""
    env = {**os.environ, **NONINTERACTIVE_ENV}
    env.setdefault("TERM", "dumb")
    return env
