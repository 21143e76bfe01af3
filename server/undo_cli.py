"""``toolhost undo``: a turn put back from the shell, with no editor or sidecar running.

Without ``--turn`` it undoes the last checkpoint (of any session); ``--list`` prints
them, newest last, as ``id  time  client  title`` with their files; ``--dry-run``
prints what a restore would put back and skip. It restores exactly as
``checkpoints/restore`` does (the same code, the same lock), so it can run while a
sidecar serves the folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list", action="store_true", help="print the checkpoints")
    parser.add_argument("--turn", metavar="ID", help="the checkpoint to undo, as --list prints it")
    parser.add_argument("--dry-run", action="store_true", help="say what would be put back")
    parser.add_argument(
        "--force",
        action="append",
        default=[],
        metavar="PATH",
        help="put PATH back even though it changed since (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), metavar="DIR")


def main(args: argparse.Namespace) -> int:
    from tools.checkpoints import restore
    from tools.checkpoints.turns import Checkpoints
    from tools.worktree import read_config

    directory = args.cwd.resolve()
    if not directory.is_dir():
        print(f"toolhost: --cwd {directory} is not a directory", file=sys.stderr)
        return 2
    for line in restore.recover():
        print(f"toolhost: warning: recovery: {line}", file=sys.stderr)
    config = read_config(directory).config
    checkpoints = Checkpoints(directory, lambda: list(config.allowed_dirs))
    listed = checkpoints.entries()
    if args.list:
        return _print_list(listed, args.json)
    target = args.turn or (listed[-1]["id"] if listed else None)
    if target is None:
        print(f"toolhost: nothing to undo: no checkpoints for {directory}", file=sys.stderr)
        return 1
    try:
        result = checkpoints.restore(target, dry_run=args.dry_run, force=args.force)
    except KeyError:
        print(
            f"toolhost: no checkpoint {target} for {directory}; `toolhost undo --list` prints them",
            file=sys.stderr,
        )
        return 2
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    verb = "would put back" if args.dry_run else "put back"
    for path in result["restored"]:
        print(f"{verb}: {path}")
    for skipped in result["skipped"]:
        print(f"skipped: {skipped['path']}: {skipped['reason']}")
    if not result["restored"] and not result["skipped"]:
        print("nothing to put back: every file is already as it was")
    if result.get("undoID"):
        print(f"undo this with: toolhost undo --turn {result['undoID']}")
    return 0


def _print_list(listed: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print(json.dumps({"checkpoints": listed}, indent=2))
        return 0
    if not listed:
        print("no checkpoints")
    for entry in listed:
        state = " (running)" if entry["open"] else ""
        print(f"{entry['id']}  {entry['time']}  {entry['client']}  {entry['title']}{state}")
        for file in [*entry["files"], *entry["outside"]]:
            by = ", ".join(file["by"])
            print(f"    {file['action']:>12}  {file['path']}  ({by})")
        if entry.get("git"):
            print(
                f"    git: HEAD moved {entry['git']['before']} -> {entry['git']['after']} "
                "(undo a commit with git itself)"
            )
    return 0
