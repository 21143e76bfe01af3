"""xargs and find: a command run for each word of the input or each file found,
its placeholder (``{}``, xargs' ``-I`` string) filled only when it runs."""

from __future__ import annotations

from dataclasses import replace

from tools.bash.commands import Effective, State, guess_programs
from tools.bash.programs.handler import Handler, Result, Walker
from tools.bash.programs.options import Options, parse_options, words
from tools.bash.shell_parse import Arg

XARGS = Options(
    flags="0oprtx",
    valued="adEILnPs",
    attached="eil",
    long_flags=words(
        "null open-tty interactive no-run-if-empty verbose exit show-limits help version "
        "eof replace max-lines"
    ),
    long_valued=words("arg-file delimiter max-args max-procs max-chars process-slot-var"),
)


def _xargs(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """xargs runs its program with words from its input appended, or put in for -I's string."""
    start, found = parse_options(walker, args, XARGS, effective, state)
    hole = None
    for name, value in found:
        if name in ("I", "i", "replace"):
            hole = (value.known if value is not None else None) or "{}"
    if hole is not None:
        state = replace(state, holes=(*state.holes, hole), appended=False)
    else:
        state = replace(state, appended=True)
    return args[start:], state  # no program: xargs runs echo


EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# find's tests and actions that take the next word as their value
FIND_VALUED = words(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname "
    "-newer -anewer -cnewer -samefile -type -xtype -user -group -uid -gid -perm -size "
    "-mtime -mmin -atime -amin -ctime -cmin -used -links -inum -maxdepth -mindepth "
    "-fstype -printf -fprintf -fprint -fprint0 -fls -regextype -context -files0-from"
)


def _find(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """Each ``-exec``/``-execdir``/``-ok``/``-okdir`` runs a command of its own."""
    terminated = any(a.value in (";", "+") for a in args)
    i = 1
    while i < len(args):
        value = walker.known(args[i], state)
        if value in EXEC_ACTIONS:
            end = i + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            words = args[i + 1 : end]
            if words:
                inner = Effective(text=" ".join(w.raw for w in words))
                walker.analysis.commands.append(inner)
                walker.unwrap(list(words), inner, State(state.depth, holes=("{}",)))
                guess_programs(inner, words)
            i = end + 1
            continue
        if value in FIND_VALUED:
            i += 2
            continue
        if value is None and args[i].value is None and terminated:
            # "$x" could be -exec itself, followed by a program
            effective.unknown.append("`find` gets an argument only known when it runs")
        i += 1
    return [], state


HANDLERS: dict[str, Handler] = {"xargs": _xargs, "find": _find}
