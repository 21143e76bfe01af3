"""Programs that run a command as another user or group: sudo, doas, pkexec (a
program and its words), su, runuser and sg (often a shell string); alone, most of
them start a shell that reads its input."""

from __future__ import annotations

import os

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import Handler, Result, Walker, program_at
from tools.bash.programs.options import Options, parse_options, words
from tools.bash.shell_parse import Arg

SUDO = Options(
    flags="AbBEeHiKklnPSsVv",
    valued="aCcDghpRrTtUu",
    long_flags=words(
        "askpass background bell edit help set-home login remove-timestamp reset-timestamp "
        "list non-interactive preserve-groups stdin shell version validate preserve-env"
    ),
    long_valued=words(
        "auth-type close-from login-class chdir group host prompt chroot role type "
        "command-timeout other-user user"
    ),
)


DOAS = Options(flags="Lns", valued="Cu")
PKEXEC = Options(
    long_flags=words("disable-internal-agent keep-cwd help version"), long_valued=words("user")
)


def run_as(spec: Options) -> Handler:
    """sudo, doas, pkexec: ``[options] [program args...]``; -s/-i alone start a shell."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        start, found = parse_options(walker, args, spec, effective, state)
        letters = {name for name, _ in found}
        for name, value in found:
            # sudo reads "-h word" as a host only when a command follows; check the
            # word as a program too, whichever way sudo takes it.
            if name == "h" and value is not None and value.known:
                effective.names.append(os.path.basename(value.known))
        rest = program_at(args, start, effective, state)
        if not rest and letters & {"s", "i", "shell", "login"}:
            effective.unknown.append(f"`{args[0].raw}` starts a shell that reads its input")
        return rest, state

    return handle


SU = Options(
    flags="flmpPhV",
    valued="cgGsw",
    long_flags=words("login preserve-environment pty fast help version"),
    long_valued=words("command session-command group supp-group shell whitelist-environment"),
)


def _su(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``su [options] [-] [user] [-c STRING]``: options may follow the user."""
    codes: list[Arg | None] = []
    i = 1
    while i < len(args):
        i, found = parse_options(walker, args, SU, effective, state, start=i)
        codes += [v for n, v in found if n in ("c", "command", "session-command")]
        i += 1  # "-" or the user name
    if not codes:
        effective.unknown.append(f"`{args[0].raw}` starts a shell that reads its input")
    for value in codes:
        code = walker.known(value, state) if value is not None else None
        if code is None:
            effective.unknown.append(f"the commands of `{args[0].raw} -c` are only known later")
        else:
            walker.nested(code, effective, state, f"the string of `{args[0].raw} -c`")
    return [], state


def _sg(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``sg GROUP [-c] COMMAND``: COMMAND is a shell string (sh -c)."""
    rest = args[2:]
    if rest and walker.known(rest[0], state) == "-c":
        rest = rest[1:]
    if not rest:
        effective.unknown.append("`sg` without a command starts a shell")
        return [], state
    values = [walker.known(a, state) for a in rest]
    if any(v is None for v in values):
        effective.unknown.append("the command `sg` runs is only known when it runs")
    else:
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "sg")
    return [], state


def _runuser(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``runuser -u USER [--] program args...``, otherwise su's form (``-c STRING``)."""
    words = [a.value for a in args[1:3]]
    if words and words[0] in ("-u", "--user"):
        start = 3
        if start < len(args) and args[start].value == "--":
            start += 1
        return program_at(args, start, effective, state), state
    return _su(walker, args, effective, state)


HANDLERS: dict[str, Handler] = {
    "sudo": run_as(SUDO),
    "doas": run_as(DOAS),
    "pkexec": run_as(PKEXEC),
    "su": _su,
    "runuser": _runuser,
    "sg": _sg,
}
