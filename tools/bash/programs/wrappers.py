"""Wrappers: programs that run the program their operands name (``nice rm x``,
``timeout 5 rm x``, ``strace rm x``...), read from each one's option spec.

An option a spec does not know makes the command unknown, never a guess at where
the program starts.
"""

from __future__ import annotations

import os

from tools.bash.commands import Effective, State
from tools.bash.programs.handler import (
    Handler,
    Result,
    Walker,
    program_at,
    skip_operands,
)
from tools.bash.programs.options import Options, gnu_options, long_help, parse_options, words
from tools.bash.shell_parse import Arg


def wrapper(spec: Options, operands: int = 0) -> Handler:
    """A program that runs ``[options] [operands] program args...``."""

    def handle(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
        start, _ = parse_options(walker, args, spec, effective, state)
        start = skip_operands(walker, args, start, operands, effective, state)
        return program_at(args, start, effective, state), state

    return handle


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
    spec = gnu_options(SETARCH_FLAGS, long_flags=SETARCH_LONG)
    start = 1
    if os.path.basename(args[0].value or "") == "setarch":
        start = skip_operands(walker, args, 1, 1, effective, state)
    start, _ = parse_options(walker, args, spec, effective, state, start=start)
    rest = program_at(args, start, effective, state)
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
    limits = set(words(PRLIMIT_LIMITS))
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
    return program_at(args, i, effective, state), state


SETPRIV = gnu_options(
    flags="d",
    long_flags="dump clear-groups keep-groups init-groups no-new-privs reset-env",
    long_valued=(
        "reuid regid ruid rgid euid egid groups inh-caps ambient-caps bounding-set "
        "securebits pdeathsig selinux-label apparmor-profile landlock-access landlock-rule "
        "seccomp-filter"
    ),
)
UNSHARE = gnu_options(
    flags="muinpUCTfrcS",
    valued="Gs",
    long_flags=(
        "mount uts ipc net pid user cgroup time fork kill-child map-root-user "
        "map-current-user map-auto keep-caps mount-proc"
    ),
    long_valued="propagation setgroups root wd load-interp map-user map-group map-users "
    "map-groups monotonic boottime setuid setgid",
)
NSENTER = gnu_options(
    flags="amuinpUCTFZ",
    valued="tSGrw",
    long_flags="all mount uts ipc net pid user cgroup time no-fork preserve-credentials "
    "follow-context user-parent",
    long_valued="target setuid setgid root wd env",
)
CHOOM = gnu_options(valued="np", long_valued="adjust pid")
DBUS_RUN_SESSION = gnu_options(long_valued="config-file dbus-daemon")
STRACE = gnu_options(
    flags="cCdDfFhiknqrtTvVwxyzZ",
    valued="abeEIoOpPsSuUX",
    long_flags="summary-only summary follow-forks output-separately instruction-pointer "
    "stack-trace quiet relative-timestamps absolute-timestamps syscall-times no-abbrev",
    long_valued="trace signal expr output attach string-limit user env columns detach-on "
    "trace-path summary-sort-by",
)
LTRACE = gnu_options(
    flags="bcCfhiLrStTVw",
    valued="aAeDFlnopsux",
    long_flags="demangle library",
    long_valued="indent output",
)
NUMACTL = gnu_options(
    flags="albHs",
    valued="ipmNCP",
    long_flags="all localalloc hardware show",
    long_valued="interleave preferred membind cpunodebind physcpubind cpubind preferred-many "
    "weighted-interleave",
)
CPULIMIT = gnu_options(
    flags="kivzrh",
    valued="lepc",
    long_flags="kill lazy verbose include-children",
    long_valued="limit exe path pid cpu",
)
CHPST = gnu_options(flags="vPmdofcrt012", valued="uUbe/nlL")
XVFB_RUN = gnu_options(
    flags="al",
    valued="efnpsw",
    long_flags="auto-servernum auto-display",
    long_valued="error-file auth-file server-num xauth-protocol server-args wait",
)


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
    return program_at(args, i, effective, state), state


def _firejail(walker: Walker, args: list[Arg], effective: Effective, state: State) -> Result:
    """Every firejail option is ``--name`` or ``--name=value``: the program follows them."""
    i = 1
    while i < len(args):
        value = walker.option(args[i], state, effective)
        if value is None:
            i += 1
            continue
        if not value.startswith("--"):
            break
        i += 1
    return program_at(args, i, effective, state), state


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
        return program_at(args, index, effective, state), state
    return [], state


HANDLERS: dict[str, Handler] = {
    "command": wrapper(Options(flags="pvV")),
    "builtin": wrapper(Options()),
    "exec": wrapper(Options(flags="cl", valued="a")),
    "nohup": wrapper(Options(long_flags=long_help())),
    "nice": wrapper(
        Options(valued="n", long_valued=words("adjustment"), long_flags=long_help(), numeric=True)
    ),
    "ionice": wrapper(
        Options(
            flags="tVh",
            valued="cnpPu",
            long_flags=long_help("ignore"),
            long_valued=words("class classdata pid pgid uid"),
        )
    ),
    "timeout": wrapper(
        Options(
            flags="v",
            valued="ks",
            long_flags=long_help("foreground preserve-status verbose"),
            long_valued=words("kill-after signal"),
        ),
        operands=1,
    ),
    "stdbuf": wrapper(
        Options(valued="ioe", long_valued=words("input output error"), long_flags=long_help())
    ),
    "time": wrapper(
        Options(
            flags="apqvV",
            valued="fo",
            long_flags=long_help("append portability quiet verbose"),
            long_valued=words("format output"),
        )
    ),
    "setsid": wrapper(Options(flags="cfwhV", long_flags=long_help("ctty fork wait"))),
    "chroot": wrapper(
        Options(long_flags=long_help("skip-chdir"), long_valued=words("userspec groups")),
        operands=1,
    ),
    "taskset": wrapper(
        Options(flags="apchV", long_flags=long_help("all-tasks pid cpu-list")), operands=1
    ),
    "chrt": wrapper(
        Options(
            flags="abdefiomprRvhV",
            valued="TPD",
            long_flags=long_help("all-tasks batch deadline fifo idle max other pid rr verbose"),
            long_valued=words("sched-runtime sched-period sched-deadline"),
        ),
        operands=1,
    ),
    "fakeroot": wrapper(
        Options(
            flags="uhv",
            valued="lsib",
            long_flags=long_help("unknown-is-real"),
            long_valued=words("lib faked fd-base"),
        )
    ),
    "unbuffer": wrapper(Options(flags="p")),
    **dict.fromkeys(("busybox", "toybox"), wrapper(Options())),
    **dict.fromkeys(
        ("setarch", "linux32", "linux64", "i386", "x86_64", "uname26", "arm64", "aarch64"),
        _setarch,
    ),
    "prlimit": _prlimit,
    "setpriv": wrapper(SETPRIV),
    "unshare": wrapper(UNSHARE),
    "nsenter": wrapper(NSENTER),
    "choom": wrapper(CHOOM),
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
    **dict.fromkeys(("proxychains", "proxychains4"), wrapper(gnu_options(flags="q", valued="f"))),
    "faketime": wrapper(gnu_options(flags="m", valued="f"), operands=1),
}
