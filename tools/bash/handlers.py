"""What each program that runs another program starts (the walker's per-program handlers).

A handler gets a wrapper's words and returns the words of the program it starts
(none when it starts none) and the state that program runs in. Options are read
from a getopt-like spec (``Options``), so an option's value is never mistaken for
the program; anything a spec does not know makes the command unknown.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tools.bash.commands import Effective, State, guess_programs
from tools.bash.constructs import special_variable
from tools.bash.shell_parse import Arg

if TYPE_CHECKING:
    from tools.bash.walker import Walker

SHELLS = frozenset(
    {"sh", "bash", "rbash", "zsh", "dash", "ash", "ksh", "mksh", "pdksh", "yash", "posh"}
    | {"fish", "csh", "tcsh"}
)

Result = tuple[list[Arg], State]
Handler = Callable[["Walker", list[Arg], Effective, State], Result]


@dataclass(frozen=True)
class Options:
    """A program's options, as its getopt string would list them."""

    flags: str = ""  # short options without a value
    valued: str = ""  # short options that take a value (attached or next word)
    attached: str = ""  # short options whose value can only be attached (-d[=x])
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    numeric: bool = False  # -5 is an option (nice)


def _words(names: str) -> frozenset[str]:
    return frozenset(names.split())


def parse_options(
    walker: Walker,
    args: list[Arg],
    spec: Options,
    effective: Effective,
    state: State,
    start: int = 1,
) -> tuple[int, list[tuple[str, Arg | None]]]:
    """Skip the options at ``args[start:]``; the index of the first operand, and each
    option with its value. Anything not understood makes the command unknown (and is
    skipped as a flag, so the commands after it are still checked)."""
    program = args[0].raw
    found: list[tuple[str, Arg | None]] = []
    i = start
    while i < len(args):
        arg = args[i]
        value = walker.option(arg, state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            return i + 1, found
        if value.startswith("--") and len(value) > 2:
            name, eq, attached = value[2:].partition("=")
            if name in spec.long_valued and not eq:
                found.append((name, args[i + 1] if i + 1 < len(args) else None))
                i += 2
                continue
            known_name = name in spec.long_valued or name in spec.long_flags
            if not known_name and not (spec.numeric and name.isdigit()):
                effective.unknown.append(f"`{program}` has an unknown option `{value}`")
            found.append((name, Arg(attached, attached) if eq else None))
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            return i, found
        i += 1
        for index, letter in enumerate(value[1:], start=1):
            rest = value[index + 1 :]
            if letter in spec.valued:
                if rest:
                    found.append((letter, Arg(rest, rest)))
                else:
                    found.append((letter, args[i] if i < len(args) else None))
                    i += 1
                break
            if letter in spec.attached:
                found.append((letter, Arg(rest, rest) if rest else None))
                break
            if spec.numeric and letter.isdigit():
                break
            if letter not in spec.flags:
                effective.unknown.append(f"`{program}` has an unknown option `-{letter}`")
            found.append((letter, None))
    return i, found


def _rest(args: list[Arg], start: int, effective: Effective, state: State) -> list[Arg]:
    """The program a wrapper starts; with none given, xargs may supply it."""
    rest = args[start:]
    if not rest and state.appended:
        effective.unknown.append("the program comes from xargs' input")
    return rest


def _operands(
    walker: Walker, args: list[Arg], start: int, count: int, effective: Effective, state: State
) -> int:
    """Skip ``count`` fixed operands (timeout's DURATION...); an expansion could shift them."""
    for arg in args[start : start + count]:
        if walker.known(arg, state) is None:
            effective.unknown.append(f"`{args[0].raw}` gets an operand only known when it runs")
    return start + count


def wrapper(spec: Options, operands: int = 0) -> Handler:
    """A program that runs ``[options] [operands] program args...``."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        start, _ = parse_options(walker, args, spec, effective, state)
        start = _operands(walker, args, start, operands, effective, state)
        return _rest(args, start, effective, state), state

    return handle


SUDO = Options(
    flags="AbBEeHiKklnPSsVv",
    valued="aCcDghpRrTtUu",
    long_flags=_words(
        "askpass background bell edit help set-home login remove-timestamp reset-timestamp "
        "list non-interactive preserve-groups stdin shell version validate preserve-env"
    ),
    long_valued=_words(
        "auth-type close-from login-class chdir group host prompt chroot role type "
        "command-timeout other-user user"
    ),
)


DOAS = Options(flags="Lns", valued="Cu")
PKEXEC = Options(
    long_flags=_words("disable-internal-agent keep-cwd help version"), long_valued=_words("user")
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
        rest = _rest(args, start, effective, state)
        if not rest and letters & {"s", "i", "shell", "login"}:
            effective.unknown.append(f"`{args[0].raw}` starts a shell that reads its input")
        return rest, state

    return handle


ENV_FLAGS = "iv0"
ENV_VALUED = "uCa"  # -S is read apart: its words take its place
ENV_LONG_FLAGS = _words(
    "ignore-environment null debug help version list-signal-handling "
    "block-signal default-signal ignore-signal"
)
ENV_LONG_VALUED = _words("unset chdir argv0")
MAX_SPLITS = 32


def _env(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [program args...]``.

    ``-S`` splits its string into words that take its place, options included
    (``env -S '-i rm x'``), as coreutils does.
    """
    i, splits = 1, 0
    while i < len(args) and _assignment_word(args[i]) is None:
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if value == "-":  # the same as -i
            i += 1
            continue
        if not value.startswith("-"):
            break
        option = _env_option(value, effective)
        if not option.splits:
            i += option.used
            continue
        code = option.string if option.used == 1 else _value_at(walker, args, i + 1, state)
        splits += 1
        if code is None or splits > MAX_SPLITS:
            effective.unknown.append("the string of `env -S` is only known when it runs")
            return [], state
        if "$" in code:
            effective.unknown.append("the string of `env -S` expands variables")
        try:
            words = shlex.split(code, comments=True)
        except ValueError:
            effective.unknown.append("the string of `env -S` could not be split")
            return [], state
        split = [*option.before, *(Arg(w, w) for w in words)]
        args = [*args[:i], *split, *args[i + option.used :]]
    while i < len(args):
        assignment = _assignment_word(args[i])
        if assignment is None:
            break
        walker.assignment(*assignment, args[i].raw, state)
        i += 1
    return _rest(args, i, effective, state), state


@dataclass(frozen=True)
class _EnvOption:
    used: int  # words the option takes (2: its value is the next word)
    splits: bool = False  # -S: its string becomes words
    string: str = ""  # -S's string when attached
    before: tuple[Arg, ...] = ()  # flags clustered before S (-vS...)


def _env_option(value: str, effective: Effective) -> _EnvOption:
    if value.startswith("--"):
        name, eq, attached = value[2:].partition("=")
        if name == "split-string":
            return _EnvOption(1 if eq else 2, splits=True, string=attached)
        if name in ENV_LONG_VALUED:
            return _EnvOption(1 if eq else 2)
        if name not in ENV_LONG_FLAGS:
            effective.unknown.append(f"`env` has an unknown option `{value}`")
        return _EnvOption(1)
    for index, letter in enumerate(value[1:], start=1):
        rest = value[index + 1 :]
        if letter == "S":
            before = (Arg(value[:index], value[:index]),) if index > 1 else ()
            return _EnvOption(1 if rest else 2, splits=True, string=rest, before=before)
        if letter in ENV_VALUED:
            return _EnvOption(1 if rest else 2)
        if letter not in ENV_FLAGS:
            effective.unknown.append(f"`env` has an unknown option `-{letter}`")
    return _EnvOption(1)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _assignment_word(arg: Arg) -> tuple[str, Arg] | None:
    """``NAME=VALUE`` as env reads it; the value may be only known at run time."""
    if arg.value is not None:
        name, eq, value = arg.value.partition("=")
        # env takes any word with "=" after a non-empty name (BASH_FUNC_x%%=...)
        return (name, Arg(value, value)) if eq and name else None
    match = _ASSIGNMENT.match(arg.raw)
    return (match.group()[:-1], Arg(arg.raw[match.end() :], None)) if match else None


def _value_at(walker: Walker, args: list[Arg], index: int, state: State) -> str | None:
    return walker.known(args[index], state) if index < len(args) else None


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
        code = _value_at(walker, operands, 0, state)
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
    long_flags=_words(
        "beep color no-color errexit chgexit precise no-rerun no-title no-wrap exec help "
        "version differences"
    ),
    long_valued=_words("interval equexit"),
)


def _watch(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """watch joins its words and runs them with ``sh -c``; with ``-x`` they are argv."""
    start, found = parse_options(walker, args, WATCH, effective, state)
    rest = _rest(args, start, effective, state)
    if {name for name, _ in found} & {"x", "exec"}:
        return rest, state
    values = [walker.known(a, state) for a in rest]
    if any(v is None for v in values):
        effective.unknown.append("the command `watch` runs is only known when it runs")
    elif values:
        walker.nested(" ".join(v for v in values if v is not None), effective, state, "watch")
    return [], state


XARGS = Options(
    flags="0oprtx",
    valued="adEILnPs",
    attached="eil",
    long_flags=_words(
        "null open-tty interactive no-run-if-empty verbose exit show-limits help version "
        "eof replace max-lines"
    ),
    long_valued=_words("arg-file delimiter max-args max-procs max-chars process-slot-var"),
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
FIND_VALUED = _words(
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


SU = Options(
    flags="flmpPhV",
    valued="cgGsw",
    long_flags=_words("login preserve-environment pty fast help version"),
    long_valued=_words("command session-command group supp-group shell whitelist-environment"),
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


FLOCK = Options(
    flags="sexnuoFhV",
    valued="wE",
    long_flags=_words("shared exclusive unlock nonblock close no-fork verbose help version"),
    long_valued=_words("timeout conflict-exit-code"),
)


def _flock(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``flock [options] FILE program args...`` or ``flock [options] FILE -c STRING``."""
    start, _ = parse_options(walker, args, FLOCK, effective, state)
    start = _operands(walker, args, start, 1, effective, state)
    rest = args[start:]
    flag = walker.known(rest[0], state) if rest else None
    if flag in ("-c", "--command") or (flag or "").startswith("--command="):
        code = flag.partition("=")[2] if flag and "=" in flag else _value_at(walker, rest, 1, state)
        if code is None:
            effective.unknown.append("the commands of `flock -c` are only known when it runs")
        else:
            walker.nested(code, effective, state, "the string of `flock -c`")
        return [], state
    return _rest(args, start, effective, state), state


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


# ---------------------------------------------------------------- more wrappers
#
# Programs that run a program given as their operands (issue 11's list and the
# like). Their options are read from a spec; an option a spec does not know makes
# the command unknown, never a guess at where the program starts.


def _spec(
    flags: str = "", valued: str = "", long_flags: str = "", long_valued: str = ""
) -> Options:
    return Options(
        flags=flags,
        valued=valued,
        long_flags=_words(f"help version {long_flags}"),
        long_valued=_words(long_valued),
    )


SETARCH_FLAGS = "v3BFILRSTXZ"
SETARCH_LONG = (
    "verbose addr-no-randomize fdpic-funcptrs mmap-page-zero addr-compat-layout "
    "read-implies-exec 32bit short-inode whole-seconds sticky-timeouts 3gb 4gb uname-2.6 "
    "list show"
)


def _setarch(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``setarch ARCH [options] [program args...]``; ``linux64 [options] [program]``.

    Without a program it starts ``$SHELL``, which reads its (empty) input.
    """
    spec = _spec(SETARCH_FLAGS, long_flags=SETARCH_LONG)
    start = 1
    if os.path.basename(args[0].value or "") == "setarch":
        start = _operands(walker, args, 1, 1, effective, state)
    start, _ = parse_options(walker, args, spec, effective, state, start=start)
    rest = _rest(args, start, effective, state)
    if not rest:
        effective.unknown.append(f"`{args[0].raw}` without a program starts a shell")
    return rest, state


PRLIMIT_LIMITS = (
    "as core cpu data fsize locks memlock msgqueue nice nofile nproc rss rtprio rttime "
    "sigpending stack"
)


def _prlimit(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``prlimit [--LIMIT[=soft:hard]]... [-p PID] [program args...]``."""
    i = 1
    limits = set(_words(PRLIMIT_LIMITS))
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if not value.startswith("-") or value == "-":
            break
        name = value[2:].partition("=")[0] if value.startswith("--") else ""
        if value in ("-p", "--pid", "-o", "--output"):
            i += 2
            continue
        if name in limits or name in ("noheadings", "raw", "verbose", "help", "version"):
            i += 1
            continue
        if len(value) >= 2 and value[1] in "ACcdefilmnqrstuvyx" and not value.startswith("--"):
            i += 1  # a short limit with its value attached (-n1024) or alone (-n)
            continue
        effective.unknown.append(f"`prlimit` has an unknown option `{value}`")
        i += 1
    return _rest(args, i, effective, state), state


SETPRIV = _spec(
    flags="d",
    long_flags="dump clear-groups keep-groups init-groups no-new-privs reset-env",
    long_valued=(
        "reuid regid ruid rgid euid egid groups inh-caps ambient-caps bounding-set "
        "securebits pdeathsig selinux-label apparmor-profile landlock-access landlock-rule "
        "seccomp-filter"
    ),
)
UNSHARE = _spec(
    flags="muinpUCTfrcS",
    valued="Gs",
    long_flags=(
        "mount uts ipc net pid user cgroup time fork kill-child map-root-user "
        "map-current-user map-auto keep-caps mount-proc"
    ),
    long_valued="propagation setgroups root wd load-interp map-user map-group map-users "
    "map-groups monotonic boottime setuid setgid",
)
NSENTER = _spec(
    flags="amuinpUCTFZ",
    valued="tSGrw",
    long_flags="all mount uts ipc net pid user cgroup time no-fork preserve-credentials "
    "follow-context user-parent",
    long_valued="target setuid setgid root wd env",
)
CHOOM = _spec(valued="np", long_valued="adjust pid")
DBUS_RUN_SESSION = _spec(long_valued="config-file dbus-daemon")
STRACE = _spec(
    flags="cCdDfFhiknqrtTvVwxyzZ",
    valued="abeEIoOpPsSuUX",
    long_flags="summary-only summary follow-forks output-separately instruction-pointer "
    "stack-trace quiet relative-timestamps absolute-timestamps syscall-times no-abbrev",
    long_valued="trace signal expr output attach string-limit user env columns detach-on "
    "trace-path summary-sort-by",
)
LTRACE = _spec(
    flags="bcCfhiLrStTVw",
    valued="aAeDFlnopsux",
    long_flags="demangle library",
    long_valued="indent output",
)
NUMACTL = _spec(
    flags="albHs",
    valued="ipmNCP",
    long_flags="all localalloc hardware show",
    long_valued="interleave preferred membind cpunodebind physcpubind cpubind preferred-many "
    "weighted-interleave",
)
VALGRIND = _spec(flags="qvh")
CPULIMIT = _spec(
    flags="kivzrh",
    valued="lepc",
    long_flags="kill lazy verbose include-children",
    long_valued="limit exe path pid cpu",
)
CHPST = _spec(flags="vPmdofcrt012", valued="uUbe/nlL")
XVFB_RUN = _spec(
    flags="al",
    valued="efnpsw",
    long_flags="auto-servernum auto-display",
    long_valued="error-file auth-file server-num xauth-protocol server-args wait",
)
FIREJAIL = Options()  # every firejail option is --name or --name=value: see _firejail


def _valgrind(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """valgrind's options are all ``--name=value`` (or a few flags)."""
    i = 1
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if not value.startswith("-"):
            break
        if not (value.startswith("--") or value in ("-q", "-v", "-h")):
            effective.unknown.append(f"`valgrind` has an unknown option `{value}`")
        i += 1
    return _rest(args, i, effective, state), state


def _firejail(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    i = 1
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if not value.startswith("--"):
            break
        i += 1
    return _rest(args, i, effective, state), state


def _script(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """``script [options] [file]``: ``-c STRING`` runs STRING with $SHELL -c; without
    it, $SHELL reads the (empty) input."""
    spec = _spec(
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


def _gdb(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """gdb runs its commands (``shell rm x``, ``python ...``) from -ex, -x and friends:
    unknown. ``gdb --args program args...`` runs the program."""
    words = [a.value or a.raw for a in args[1:]]
    scripted = {
        "-ex",
        "-iex",
        "-x",
        "-ix",
        "--eval-command",
        "--command",
        "--init-command",
        "--init-eval-command",
        "-eval-command",
        "-command",
    }
    if any(w in scripted or w.split("=")[0] in scripted for w in words):
        effective.unknown.append("`gdb` runs the commands given to it (-ex, -x), any of them")
    if "--args" in words:
        index = words.index("--args") + 2
        return _rest(args, index, effective, state), state
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
        return _rest(args, start, effective, state), state
    return _su(walker, args, effective, state)


def _outside(reason: str) -> Handler:
    """Programs that hand a command to something outside this process tree (systemd,
    atd, cron, a terminal multiplexer's server, ssh): no sandbox holds it."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        effective.unknown.append(f"`{args[0].raw}` {reason}")
        return [], state

    return handle


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


def _unknown(reason: str) -> Handler:
    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        effective.unknown.append(f"`{args[0].raw}` {reason}")
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


def _long_help(more: str = "") -> frozenset[str]:
    return _words(f"help version {more}")


HANDLERS: dict[str, Handler] = {
    "sudo": run_as(SUDO),
    "doas": run_as(DOAS),
    "pkexec": run_as(PKEXEC),
    "env": _env,
    "command": wrapper(Options(flags="pvV")),
    "builtin": wrapper(Options()),
    "exec": wrapper(Options(flags="cl", valued="a")),
    "nohup": wrapper(Options(long_flags=_long_help())),
    "nice": wrapper(
        Options(valued="n", long_valued=_words("adjustment"), long_flags=_long_help(), numeric=True)
    ),
    "ionice": wrapper(
        Options(
            flags="tVh",
            valued="cnpPu",
            long_flags=_long_help("ignore"),
            long_valued=_words("class classdata pid pgid uid"),
        )
    ),
    "timeout": wrapper(
        Options(
            flags="v",
            valued="ks",
            long_flags=_long_help("foreground preserve-status verbose"),
            long_valued=_words("kill-after signal"),
        ),
        operands=1,
    ),
    "stdbuf": wrapper(
        Options(valued="ioe", long_valued=_words("input output error"), long_flags=_long_help())
    ),
    "time": wrapper(
        Options(
            flags="apqvV",
            valued="fo",
            long_flags=_long_help("append portability quiet verbose"),
            long_valued=_words("format output"),
        )
    ),
    "setsid": wrapper(Options(flags="cfwhV", long_flags=_long_help("ctty fork wait"))),
    "chroot": wrapper(
        Options(long_flags=_long_help("skip-chdir"), long_valued=_words("userspec groups")),
        operands=1,
    ),
    "taskset": wrapper(
        Options(flags="apchV", long_flags=_long_help("all-tasks pid cpu-list")), operands=1
    ),
    "chrt": wrapper(
        Options(
            flags="abdefiomprRvhV",
            valued="TPD",
            long_flags=_long_help("all-tasks batch deadline fifo idle max other pid rr verbose"),
            long_valued=_words("sched-runtime sched-period sched-deadline"),
        ),
        operands=1,
    ),
    "fakeroot": wrapper(
        Options(
            flags="uhv",
            valued="lsib",
            long_flags=_long_help("unknown-is-real"),
            long_valued=_words("lib faked fd-base"),
        )
    ),
    "unbuffer": wrapper(Options(flags="p")),
    **dict.fromkeys(("busybox", "toybox"), wrapper(Options())),
    "coproc": _coproc,
    "watch": _watch,
    "xargs": _xargs,
    "find": _find,
    **dict.fromkeys(SHELLS, _shell),
    "eval": _eval,
    **dict.fromkeys(("source", "."), _source),
    "trap": _trap,
    "alias": _alias,
    "hash": _hash,
    **dict.fromkeys(("su", "runuser"), _su),
    "flock": _flock,
    **dict.fromkeys(("mapfile", "readarray"), _mapfile),
    **dict.fromkeys(
        ("setarch", "linux32", "linux64", "i386", "x86_64", "uname26", "arm64", "aarch64"),
        _setarch,
    ),
    "prlimit": _prlimit,
    "setpriv": wrapper(SETPRIV),
    "unshare": wrapper(UNSHARE),
    "nsenter": wrapper(NSENTER),
    "choom": wrapper(CHOOM),
    "script": _script,
    "dbus-run-session": wrapper(DBUS_RUN_SESSION),
    "strace": wrapper(STRACE),
    "ltrace": wrapper(LTRACE),
    "gdb": _gdb,
    "numactl": wrapper(NUMACTL),
    "valgrind": _valgrind,
    "cpulimit": wrapper(CPULIMIT),
    "chpst": wrapper(CHPST),
    "xvfb-run": wrapper(XVFB_RUN),
    "firejail": _firejail,
    **dict.fromkeys(
        ("nocache", "catchsegv", "torsocks", "tsocks", "eatmydata"), wrapper(Options())
    ),
    **dict.fromkeys(("proxychains", "proxychains4"), wrapper(_spec(flags="q", valued="f"))),
    "faketime": wrapper(_spec(flags="m", valued="f"), operands=1),
    "sg": _sg,
    "runuser": _runuser,
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
    "read": _name_targets(Options(flags="ers", valued="adinNptu"), "a", True),
    "printf": _name_targets(Options(valued="v"), "v", False),
    "getopts": _getopts,
    "wait": _name_targets(Options(flags="fn", valued="p"), "p", False),
    **dict.fromkeys(("test", "["), _test),
    "expect": _unknown("runs the Tcl script it is given"),
}
