"""``toolhost setup AGENT [--project] [--print]``: the command line.

Every file is read and changed in memory first; one that cannot be parsed stops the
run before anything is written. A file whose text would not change is left alone (a
second run says so); a changed one is backed up beside itself, then replaced in one
rename, and the diff is shown (``--print``: the diff only).
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
from pathlib import Path

from server.setup.agents import AGENTS, Change, plan
from server.setup.config_file import Document, SetupError

BACKUP_SUFFIX = ".toolhost-backup"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", choices=AGENTS, help="the agent to set up")
    parser.add_argument(
        "--project",
        action="store_true",
        help="write the folder's own config (the one --cwd names) instead of yours",
    )
    parser.add_argument(
        "--print",
        dest="print_only",
        action="store_true",
        help="show what would change in each file, and write nothing",
    )
    parser.add_argument("--cwd", type=Path, default=None, help="the project folder (.)")


def main(args: argparse.Namespace) -> int:
    from server.acp.upstream import toolhost_command

    project = (args.cwd or Path.cwd()).resolve() if args.project else None
    chosen = plan(args.agent, toolhost_command(), project)
    try:
        documents = [
            _changed(target.path, target.kind, target.changes) for target in chosen.targets
        ]
    except SetupError as error:
        print(f"toolhost setup {args.agent}: {error}", file=sys.stderr)
        return 1
    changed = [doc for doc in documents if doc.after() != doc.before]
    for doc in documents:
        if doc not in changed:
            print(f"{doc.path}: already set up, unchanged")
    for doc in changed:
        print(_diff(doc), end="")
        if args.print_only:
            continue
        try:
            _write(doc)
        except OSError as error:
            print(f"toolhost setup {args.agent}: cannot write {doc.path}: {error}", file=sys.stderr)
            return 1
        backup = f" (the old one is {doc.path}{BACKUP_SUFFIX})" if doc.exists else ""
        print(f"{doc.path}: written{backup}")
    for note in chosen.notes:
        print(f"note: {note}")
    if not changed:
        print(f"toolhost setup {args.agent}: already set up, nothing changed")
    elif args.print_only:
        print(f"toolhost setup {args.agent}: --print, so nothing was written")
    return 0


def _changed(path: Path, kind: str, changes: list[Change]) -> Document:
    doc = Document(path, kind)
    for change in changes:
        change(doc)
    return doc


def _diff(doc: Document) -> str:
    before = doc.before.splitlines(keepends=True) if doc.exists else []
    lines = difflib.unified_diff(
        before,
        doc.after().splitlines(keepends=True),
        str(doc.path) if doc.exists else "/dev/null",
        str(doc.path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _write(doc: Document) -> None:
    from tools.fsio.text import atomic_write

    mode = None
    if doc.exists:
        shutil.copy2(doc.path, doc.path.with_name(doc.path.name + BACKUP_SUFFIX))
        mode = os.stat(doc.path).st_mode & 0o7777
    atomic_write(doc.path, doc.after().encode("utf-8"), mode)
