"""Programs whose command the walker does not follow: they hand it to something
outside this process tree (systemd, atd, cron, a terminal server, another machine)
or run what their options, a directory or a script name. Each is unknown."""

from __future__ import annotations

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import Handler, Result, Walker
from tools.bash.shell_parse import Arg


def _unknown(reason: str) -> Handler:
    """A program whose command is not followed, for ``reason``."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        effective.unknown.append(f"`{args[0].raw}` {reason}")
        return [], state

    return handle


def _outside(reason: str) -> Handler:
    """Programs that hand a command to something outside this process tree (systemd,
    atd, cron, a terminal multiplexer's server, ssh): no sandbox holds it."""
    return _unknown(reason)


HANDLERS: dict[str, Handler] = {
    "systemd-run": _outside("asks systemd to run the command, outside this sandbox"),
    **dict.fromkeys(
        ("at", "batch"), _outside("schedules the command with atd, outside this sandbox")
    ),
    "crontab": _outside("installs commands that cron runs later, outside this sandbox"),
    **dict.fromkeys(
        ("tmux", "screen"),
        _outside("can run commands in a terminal server that runs outside this sandbox"),
    ),
    **dict.fromkeys(
        ("ssh", "rsh", "mosh"), _outside("runs its command on another machine, or this one")
    ),
    **dict.fromkeys(
        ("bwrap", "proot", "start-stop-daemon", "daemonize", "parallel"),
        _unknown("runs a program its options name, which is not followed"),
    ),
    "run-parts": _unknown("runs every script in a directory"),
    "enable": _unknown("loads or switches builtins, which changes what a name runs"),
    "let": _unknown("evaluates arithmetic, which can run the commands a value hides"),
    "expect": _unknown("runs the Tcl script it is given"),
}
