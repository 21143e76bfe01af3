"""Bash builtins whose words name something to check: the program ``hash -p`` binds,
the variables ``read``, ``printf -v``, ``wait -p`` and ``getopts`` assign, the
subscript ``test -v`` evaluates, and the command ``coproc`` starts."""

from __future__ import annotations

import os

from tools.bash.commands import Effective, State
from tools.bash.constructs import special_variable
from tools.bash.programs.handler import Handler, Result, Walker
from tools.bash.programs.options import Options, parse_options
from tools.bash.shell_parse import Arg


def _hash(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``hash -p /bin/rm ls`` makes ``ls`` run /bin/rm: the path is a program too."""
    _, found = parse_options(walker, args, Options(flags="dlrt", valued="p"), effective, state)
    for name, value in found:
        if name != "p":
            continue
        program = walker.known(value, state) if value is not None else None
        if program is None:
            effective.unknown.append("`hash -p` gets a program only known when it runs")
        else:
            effective.names.append(os.path.basename(program))
    return [], state


def _name_targets(spec: Options, targets: str, operands_are_names: bool) -> Handler:
    """Builtins that assign variables by name (``read NAME``, ``printf -v NAME``): a
    name only known at run time, a subscript, or a special variable is unknown."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        start, found = parse_options(walker, args, spec, effective, state)
        names = [v for n, v in found if n in targets]
        if operands_are_names:
            names += args[start:]
        for arg in names:
            value = walker.known(arg, state) if arg is not None else None
            if value is None or "[" in value:
                effective.unknown.append(
                    f"`{args[0].raw}` assigns a variable named by an expansion or a subscript, "
                    "which bash evaluates as arithmetic"
                )
            elif (why := special_variable(value)) is not None:
                effective.unknown.append(why)
        return [], state

    return handle


def _test(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``test -v NAME`` / ``[ -v NAME ]`` evaluates a subscript in NAME."""
    for index, arg in enumerate(args[1:-1], start=1):
        if walker.known(arg, state) in ("-v", "-R"):
            name = walker.known(args[index + 1], state)
            if name is None or "[" in name:
                effective.unknown.append("`-v` with a subscript evaluates it as arithmetic")
    return [], state


def _coproc(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``coproc [NAME] COMMAND``. tree-sitter reads ``coproc NAME { cmd; }`` as one
    command whose words run up to the first ``;``: the first command of the group is
    followed, and the rest of it is unknown."""
    if len(args) >= 3 and args[2].value in ("{", "(", "(("):
        effective.unknown.append("`coproc NAME { … }` is only partly followed")
        return args[3:], state
    return args[1:], state


def _getopts(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``getopts OPTSTRING NAME [args]``: NAME is assigned."""
    if len(args) >= 3:
        name = walker.known(args[2], state)
        if name is None or "[" in name or special_variable(name):
            effective.unknown.append("`getopts` assigns a variable it should not")
    return [], state


HANDLERS: dict[str, Handler] = {
    "hash": _hash,
    "read": _name_targets(Options(flags="ers", valued="adinNptu"), "a", True),
    "printf": _name_targets(Options(valued="v"), "v", False),
    "wait": _name_targets(Options(flags="fn", valued="p"), "p", False),
    "getopts": _getopts,
    **dict.fromkeys(("test", "["), _test),
    "coproc": _coproc,
}
