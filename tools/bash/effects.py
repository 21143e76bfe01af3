"""Which paths a line touches, and where its ``cd``\\ s take it.

For each command (its innermost program, past wrappers), the words that name a
path it reads or writes (``PATH_ARGUMENTS``: cp's operands and ``-t DIR``,
``dd of=``, ``tee``, ``sed -i``, ``git -C``/``--git-dir``/``init``/``clone``,
``tar -C``/``-f``, ``curl -o``...), and every file a redirection opens. Relative
paths are taken against the working directory and every directory the line
``cd``\\ s or ``pushd``\\ es to before them (``cd`` alone: ``$HOME``).

A word may use a variable: one the line assigns a literal value (``f=/out/x;
echo > $f``) or one in the environment is expanded. A directory change that is
only known when the line runs (``cd -``, ``popd``, ``cd $(...)``, ``cd x`` with
``CDPATH`` set) makes the command unknown: the paths after it could be anywhere.
A path argument that is only known at run time is unknown too when ``strict``
(the kernel does not hold writes to the project); otherwise the sandbox is the
backstop for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tools.bash.commands import Analysis, Effective, Stage
from tools.bash.shell_parse import Arg

MAX_BASES = 16  # directories a line cds to that later relative paths are checked against


@dataclass(frozen=True)
class PathArguments:
    """Which words of a program's arguments are paths."""

    operands: bool = True  # its operands (the words that are not options)
    skip: int = 0  # leading operands that are not paths (chmod's mode)
    valued: str = ""  # short options that take a value that is not a path
    long_valued: frozenset[str] = frozenset()
    path_options: str = ""  # short options whose value is a path
    long_path_options: frozenset[str] = frozenset()
    assignments: frozenset[str] = frozenset()  # dd's of=PATH
    only_with: str = ""  # its operands are paths only with one of these flags (sed -i)
    reads: bool = False  # its operands are only read (cat)
    copies: bool = False  # only its last operand (or -t DIR) is written (cp, ln)
    directories: frozenset[str] = frozenset(
        {
            "t",
            "target-directory",
            "C",
            "directory",
            "d",
            "P",
            "directory-prefix",
            "output-dir",
            "p",
            "tmpdir",
        }
    )  # options naming a directory


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PLAIN = PathArguments()
PATH_ARGUMENTS: dict[str, PathArguments] = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred", "tee"), _PLAIN),
    "cat": PathArguments(reads=True),
    "cp": PathArguments(
        path_options="tS", long_path_options=_words("target-directory"), copies=True
    ),
    "mv": PathArguments(path_options="tS", long_path_options=_words("target-directory")),
    "ln": PathArguments(
        path_options="t", valued="S", long_path_options=_words("target-directory"), copies=True
    ),
    "install": PathArguments(
        valued="mogS", path_options="t", long_path_options=_words("target-directory"), copies=True
    ),
    "mkdir": PathArguments(valued="m", long_valued=_words("mode context")),
    "mkfifo": PathArguments(valued="m", long_valued=_words("mode context")),
    "touch": PathArguments(
        valued="dt",
        path_options="r",
        long_valued=_words("date time"),
        long_path_options=_words("reference"),
    ),
    "truncate": PathArguments(
        valued="s",
        path_options="r",
        long_valued=_words("size"),
        long_path_options=_words("reference"),
    ),
    **dict.fromkeys(
        ("chmod", "chown", "chgrp"),
        PathArguments(skip=1, long_path_options=_words("reference")),
    ),
    "dd": PathArguments(operands=False, assignments=_words("of if")),
    "sed": PathArguments(
        valued="ef", long_valued=_words("expression file line-length"), skip=1, only_with="i"
    ),
    "split": PathArguments(
        valued="abCdln",
        long_valued=_words("suffix-length bytes line-bytes lines number additional-suffix"),
    ),
    "tar": PathArguments(
        operands=False, path_options="Cf", long_path_options=_words("directory file")
    ),
    "curl": PathArguments(
        operands=False, path_options="o", long_path_options=_words("output output-dir")
    ),
    "wget": PathArguments(
        operands=False,
        path_options="OPo",
        long_path_options=_words("output-document directory-prefix output-file"),
    ),
    "unzip": PathArguments(operands=False, path_options="d"),
    "patch": PathArguments(
        operands=False, path_options="doi", long_path_options=_words("directory output input")
    ),
    "rsync": PathArguments(
        valued="e", long_valued=_words("rsh exclude include filter"), copies=True
    ),
    "mktemp": PathArguments(operands=False, path_options="p", long_path_options=_words("tmpdir")),
}

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Touched:
    path: str  # absolute, as written (neither resolved nor normalised)
    is_dir: bool  # a directory, or a file in the directory holding it
    writes: bool  # written (or created, removed), not only read


@dataclass
class Effects:
    paths: list[Touched] = field(default_factory=list)
    bases: list[Path] = field(default_factory=list)  # cwd and every directory cd'd to
    unknown: list[tuple[str, str]] = field(default_factory=list)  # (command text, why)


def effects(
    analysis: Analysis,
    workdir: Path,
    environ: Mapping[str, str],
    *,
    strict: bool,
    variables: Mapping[str, str | None] | None = None,
) -> Effects:
    """The paths ``analysis`` touches; ``strict``: a run-time path argument is unknown."""
    found = Effects(bases=[workdir])
    names = dict(variables or {})

    def word(arg: Arg) -> str | None:
        return expand(arg, names, environ)

    def add(
        value: str | None, command: Effective, what: str, is_dir: bool = False, writes: bool = True
    ) -> None:
        if value is None:
            if strict:
                found.unknown.append((command.text, f"{what} is only known when it runs"))
            return
        expanded = os.path.expanduser(value)
        for base in list(found.bases):
            path = expanded if os.path.isabs(expanded) else os.path.join(base, expanded)
            # not normalised: `link/..` is read physically by the kernel (paths.locations)
            found.paths.append(Touched(path, is_dir or value.endswith("/"), writes))

    for command in analysis.commands:
        stage = command.innermost
        if stage is None or (command.unknown and not command.stages):
            continue
        if stage.name in ("cd", "pushd", "popd"):
            _directory_change(stage, command, found, word, environ, names)
            continue
        if stage.name == "git":
            _git(stage, command, found, word, add)
            continue
        spec = PATH_ARGUMENTS.get(stage.name)
        if spec is not None:
            for value, what, is_dir, writes in _path_words(stage, spec, word):
                add(value, command, what, is_dir, writes)
    written = [id(a) for a in analysis.written]
    for arg in analysis.redirects:
        value = word(arg)
        if value is None:
            if strict:
                found.unknown.append((arg.raw, "the file a redirection opens is only known later"))
            continue
        add(value, Effective(text=arg.raw), "the redirection's file", writes=id(arg) in written)
    return found


def expand(arg: Arg, variables: Mapping[str, str | None], environ: Mapping[str, str]) -> str | None:
    """The path a word names: its value, or with ``$VAR``/``${VAR}`` expanded (the
    line's literal assignments first, then the environment) when nothing else in it
    is only known at run time."""
    if arg.value is not None:
        return None if arg.expands else arg.value
    raw = arg.raw
    if any(sign in raw for sign in ("$(", "`", "'", "$((", "\\")):
        return None
    unquoted = raw.replace('"', "")
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(2)
        known = variables[name] if name in variables else environ.get(name)
        if known is None:
            missing = True
            return ""
        return known

    expanded = _VARIABLE.sub(value, unquoted)
    if missing or "$" in expanded or any(c in expanded for c in "*?["):
        return None
    return expanded


def _path_words(
    stage: Stage, spec: PathArguments, word: object
) -> list[tuple[str | None, str, bool, bool]]:
    """(path or None when only known at run time, what it is, whether it is a
    directory, whether it is written)."""
    assert callable(word)
    args = stage.args[1:]
    out: list[tuple[str | None, str, bool, bool]] = []
    writes = not spec.reads
    operands: list[Arg] = []
    flags: set[str] = set()
    i = 0
    ended = False
    while i < len(args):
        arg = args[i]
        text = arg.value
        if ended or text is None or not text.startswith("-") or text == "-":
            if text is not None and "=" in text and text.split("=", 1)[0] in spec.assignments:
                name, _, value = text.partition("=")
                out.append((value or None, f"`{stage.name} {name}=`", False, name == "of"))
            elif not spec.assignments:
                operands.append(arg)
            i += 1
            continue
        if text == "--":
            ended = True
            i += 1
            continue
        if text.startswith("--"):
            name, eq, attached = text[2:].partition("=")
            takes = name in spec.long_valued or name in spec.long_path_options
            if name in spec.long_path_options:
                is_dir = name in spec.directories
                if eq:
                    out.append((attached, f"`--{name}`", is_dir, writes))
                elif i + 1 < len(args):
                    out.append((word(args[i + 1]), f"`--{name}`", is_dir, writes))
            i += 1 if eq or not takes else 2
            continue
        letters = text[1:]
        i += 1
        for index, letter in enumerate(letters):
            flags.add(letter)
            rest = letters[index + 1 :]
            if letter in spec.path_options:
                found: str | None = rest or (word(args[i]) if i < len(args) else None)
                if not rest:
                    i += 1
                out.append((found, f"`-{letter}`", letter in spec.directories, writes))
                break
            if letter in spec.valued:
                if not rest:
                    i += 1
                break
    if spec.only_with and not flags & set(spec.only_with):
        return out
    if spec.operands:
        paths = operands[spec.skip :]
        targeted = any(what in ("`-t`", "`--target-directory`") for _, what, _, _ in out)
        for index, arg in enumerate(paths):
            if stage.name == "rsync" and (arg.value or "").count(":"):
                continue  # a remote path
            last = index == len(paths) - 1 and not targeted
            written = writes and (not spec.copies or last)
            out.append((word(arg), f"an argument of `{stage.name}`", False, written))
    return out


def _directory_change(
    stage: Stage,
    command: Effective,
    found: Effects,
    word: object,
    environ: Mapping[str, str],
    names: Mapping[str, str | None],
) -> None:
    assert callable(word)
    operands = [a for a in stage.args[1:] if not (a.value or "").startswith("-") or a.value == "-"]
    if stage.name == "popd" or (stage.name == "pushd" and not operands):
        found.unknown.append((command.text, f"`{stage.name}` goes to a directory from its stack"))
        return
    if not operands:
        target: str | None = environ.get("HOME") or str(Path.home())
    elif operands[0].value == "-":
        found.unknown.append((command.text, "`cd -` goes back to a directory only known later"))
        return
    else:
        target = word(operands[0])
    if target is None:
        found.unknown.append(
            (command.text, f"the directory `{stage.name}` goes to is only known later")
        )
        return
    cdpath = names.get("CDPATH") if "CDPATH" in names else environ.get("CDPATH")
    relative = not os.path.isabs(os.path.expanduser(target))
    if cdpath and relative and not target.startswith(("./", "../")) and target not in (".", ".."):
        found.unknown.append((command.text, "with CDPATH set, `cd` may go somewhere else"))
        return
    for base in list(found.bases):
        path = os.path.join(base, os.path.expanduser(target))
        found.paths.append(Touched(path, True, False))
    if len(found.bases) < MAX_BASES:
        news = [
            Path(os.path.normpath(os.path.join(b, os.path.expanduser(target)))) for b in found.bases
        ]
        found.bases += [d for d in news if d not in found.bases]


def _git(stage: Stage, command: Effective, found: Effects, word: object, add: object) -> None:
    """``git -C DIR``, ``--git-dir``/``--work-tree``, ``init [DIR]``, ``clone URL [DIR]``,
    ``worktree add PATH``."""
    assert callable(word) and callable(add)
    args = list(stage.args[1:])
    i = 0
    while i < len(args):
        text = args[i].value
        if text in ("-C", "-c") and i + 1 < len(args):
            if text == "-C":
                add(word(args[i + 1]), command, "`git -C`", True)
            i += 2
            continue
        if text is not None and text.startswith(("--git-dir", "--work-tree")):
            name, eq, value = text.partition("=")
            if eq:
                add(value, command, f"`git {name}`", True)
                i += 1
            else:
                add(
                    word(args[i + 1]) if i + 1 < len(args) else None, command, f"`git {name}`", True
                )
                i += 2
            continue
        if text is None or text.startswith("-"):
            i += 1
            continue
        break
    rest = [a for a in args[i:]]
    if not rest:
        return
    sub = rest[0].value
    operands = [a for a in rest[1:] if not (a.value or "").startswith("-")]
    if sub == "init" and operands:
        add(word(operands[0]), command, "`git init`", True)
    elif sub == "clone" and len(operands) >= 2:
        add(word(operands[1]), command, "`git clone`", True)
    elif sub == "worktree" and operands[:1] and operands[0].value == "add" and len(operands) >= 2:
        add(word(operands[1]), command, "`git worktree add`", True)
