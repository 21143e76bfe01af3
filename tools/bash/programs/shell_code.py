"""Programs and builtins that run a string as shell code: shells (``bash -c``),
``eval``, ``source``, ``watch``, ``script -c``, ``flock -c``, ``trap``, ``alias`` and
``mapfile -C``. A literal string is followed like a line of its own."""

from __future__ import annotations

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import (
    Handler,
    Result,
    Walker,
    program_at,
    skip_operands,
    value_at,
)
from tools.bash.programs.options import Options, gnu_options, parse_options, words
from tools.bash.shell_parse import Arg

# Shells: -c runs its string, otherwise a script or the input (POSIX or not).
SHELLS = frozenset(
    {"sh", "bash", "rbash", "zsh", "dash", "ash", "ksh", "mksh", "pdksh", "yash", "posh"}
    | {"fish", "csh", "tcsh"}
)


def _shell(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``bash [options] -c STRING [name args...]`` runs STRING; otherwise a script or input."""
    program = args[0].raw
    i, mode, informational = 1, "", False
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value in ("--", "-"):
            i += 1
            break
        if value.startswith("--"):
            name, eq, _ = value[2:].partition("=")
            informational = informational or name in ("version", "help")
            i += 2 if name in ("rcfile", "init-file") and not eq else 1
            continue
        if value[0] in "-+" and len(value) > 1:
            letters = value[1:]
            if "c" in letters:
                mode = "c"
            elif "s" in letters and not mode:
                mode = "s"
            i += 1 + letters.count("o") + letters.count("O")  # -o/-O take a name
            continue
        break
    operands = args[i:]
    if mode == "c":
        code = value_at(walker, operands, 0, state)
        if code is None:
            effective.unknown.append(f"the commands of `{program} -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, f"the string of `{program} -c`")
    elif not informational:
        if operands and mode != "s":
            effective.unknown.append(
                f"`{program}` runs the script `{operands[0].raw}`, whose commands are not known"
            )
        else:
            effective.unknown.append(f"`{program}` runs the commands it reads from its input")
    return [], state


def _eval(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    effective.unknown.append("`eval` runs text as commands")
    values = [walker.known(a, state) for a in args[1:]]
    if values and all(v is not None for v in values):
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "eval")
    return [], state


def _source(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    effective.unknown.append(f"`{args[0].raw}` runs the commands of a file, which are not known")
    return [], state


WATCH = Options(
    flags="bcCeghprtwxv",
    valued="nq",
    attached="d",
    long_flags=words(
        "beep color no-color errexit chgexit precise no-rerun no-title no-wrap exec help "
        "version differences"
    ),
    long_valued=words("interval equexit"),
)


def _watch(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """watch joins its words and runs them with ``sh -c``; with ``-x`` they are argv."""
    start, found = parse_options(walker, args, WATCH, effective, state)
    rest = program_at(args, start, effective, state)
    if {name for name, _ in found} & {"x", "exec"}:
        return rest, state
    values = [walker.known(a, state) for a in rest]
    if any(v is None for v in values):
        effective.unknown.append("the command `watch` runs is only known when it runs")
    elif values:
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "watch")
    return [], state


def _trap(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``trap ACTION SIGNAL...``: ACTION is shell code (one operand alone resets a signal)."""
    start, _ = parse_options(walker, args, Options(flags="lpP"), effective, state)
    operands = args[start:]
    if len(operands) >= 2:
        code = walker.known(operands[0], state)
        if code is None:
            effective.unknown.append("the action of `trap` is only known when it runs")
        elif code not in ("", "-"):
            walker.nested(code, effective, state, "the action of `trap`")
            # It runs later, on a signal, on every command (DEBUG) or at exit, in
            # whatever state the line left: followed for denials, asked for anyway.
            effective.unknown.append("`trap` runs its action later, when bash decides")
    return [], state


def _alias(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    for arg in args[1:]:
        value = walker.known(arg, state)
        if value is None:
            effective.unknown.append("an alias defined with a value only known when it runs")
            continue
        name, eq, code = value.partition("=")
        if eq and not value.startswith("-"):
            walker.nested(code, effective, state, f"the alias `{name}`")
    return [], state


FLOCK = Options(
    flags="sexnuoFhV",
    valued="wE",
    long_flags=words("shared exclusive unlock nonblock close no-fork verbose help version"),
    long_valued=words("timeout conflict-exit-code"),
)


def _flock(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``flock [options] FILE program args...`` or ``flock [options] FILE -c STRING``."""
    start, _ = parse_options(walker, args, FLOCK, effective, state)
    start = skip_operands(walker, args, start, 1, effective, state)
    rest = args[start:]
    flag = walker.known(rest[0], state) if rest else None
    if flag in ("-c", "--command") or (flag or "").startswith("--command="):
        code = flag.partition("=")[2] if flag and "=" in flag else value_at(walker, rest, 1, state)
        if code is None:
            effective.unknown.append("the commands of `flock -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, "the string of `flock -c`")
        return [], state
    return program_at(args, start, effective, state), state


MAPFILE = Options(flags="t", valued="dnOsuCc")


def _mapfile(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``mapfile -C CALLBACK`` evaluates CALLBACK as shell code."""
    _, found = parse_options(walker, args, MAPFILE, effective, state)
    for name, value in found:
        if name == "C":
            code = walker.known(value, state) if value is not None else None
            if code is None:
                effective.unknown.append("the callback of `mapfile -C` is only known later")
            else:
                walker.nested(code, effective, state, "the callback of `mapfile -C`")
    return [], state


def _script(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``script [options] [file]``: ``-c STRING`` runs STRING with $SHELL -c; without
    it, $SHELL reads the (empty) input."""
    spec = gnu_options(
        flags="aefqkTw",
        valued="cBEIOmTto",
        long_flags="append return flush force quiet log-io log-in log-out log-timing",
        long_valued="command echo logging-format timing output-limit",
    )
    _, found = parse_options(walker, args, spec, effective, state)
    codes = [v for name, v in found if name in ("c", "command")]
    if not codes:
        effective.unknown.append("`script` without -c starts a shell")
    for value in codes:
        code = walker.known(value, state) if value is not None else None
        if code is None:
            effective.unknown.append("the commands of `script -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, "the string of `script -c`")
    return [], state


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(SHELLS, _shell),
    "eval": _eval,
    **dict.fromkeys(("source", "."), _source),
    "watch": _watch,
    "script": _script,
    "flock": _flock,
    "trap": _trap,
    "alias": _alias,
    **dict.fromkeys(("mapfile", "readarray"), _mapfile),
}
