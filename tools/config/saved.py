""" "Always" rules a person chose to keep: saved to the project's or the user's config.

A rule goes into the ``permission`` section of one OpenCode config file, the one
read last of its scope (so it is not overridden by a sibling file): the project's
``.opencode/opencode.json[c]`` or ``opencode.json[c]`` at its root, else a new
``opencode.json`` at the root; for the user, the global dir's ``opencode.jsonc``,
``opencode.json`` or ``config.json``, else a new ``opencode.json`` there.

Files are rewritten as plain JSON (two-space indent, keys in their order).  A file
with comments or trailing commas is never rewritten, since that would lose what the
person wrote; they are told which line to add instead.  The server watches these
files, so a change here reaches the rules on the next read of the config.

Every write is recorded (``writes``: the file's content hash before and after), so the
server can tell toolhost's own write of a rule the person just chose from a change
someone else made, and accept the first without asking again.  Removing the last rule
leaves nothing behind: an emptied entry or ``permission`` section goes, and a file that
toolhost created and that now configures nothing is deleted, with the folders made for
it when they are empty (``created.json`` in toolhost's state folder remembers which files
and folders those are, across restarts).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tools.config import jsonc
from tools.config.dirs import global_config_dir
from tools.permission.approvals import Approval, RuleStore, SaveError
from tools.permission.asks import Scope, describe_patterns
from tools.permission.rules import Rule

SCHEMA = "https://opencode.ai/config.json"
PROJECT_CANDIDATES = (".opencode/opencode.json", ".opencode/opencode.jsonc")
ROOT_CANDIDATES = ("opencode.json", "opencode.jsonc")
USER_CANDIDATES = ("config.json", "opencode.json", "opencode.jsonc")


# A file's content hash (sha1 of its bytes, as ``tools.custom.discovery.digest``); None: absent.
Digest = str | None


class ConfigRuleStore(RuleStore):
    def __init__(self, worktree: Path, on_written: Callable[[Path], None] | None = None) -> None:
        self.worktree = worktree
        # Told of every file written (checkpoints: toolhost's write, not a change outside).
        self.on_written = on_written or (lambda path: None)
        # Per file, each write toolhost made: (hash before, hash after), oldest first.
        self.writes: dict[Path, list[tuple[Digest, Digest]]] = {}

    def targets(self) -> dict[str, str]:
        """Where an "always" of each saved scope would be written, for the prompt's labels."""
        return {scope: str(self.target(scope)) for scope in ("project", "user")}

    def own_write(self, path: Path, before: Digest, now: Digest) -> bool:
        """True when toolhost's own writes alone take ``path`` from ``before`` to ``now``."""
        if before == now:
            return False
        reached = before
        for old, new in self.writes.get(Path(os.path.abspath(path)), []):
            if old == reached:
                reached = new
                if reached == now:
                    return True
        return False

    def settled(self, path: Path, digest: Digest) -> None:
        # Spent, so the same bytes written again later (a replay) are not taken for ours.
        writes = self.writes.get(Path(os.path.abspath(path)), [])
        last = max((i for i, (_, after) in enumerate(writes) if after == digest), default=-1)
        del writes[: last + 1]

    def files(self, scope: Scope) -> list[Path]:
        """The JSON config files of ``scope``, in the order they are read."""
        if scope == "user":
            home = global_config_dir()
            return [home / name for name in USER_CANDIDATES]
        root = [self.worktree / name for name in ROOT_CANDIDATES]
        return [*root, *(self.worktree / name for name in PROJECT_CANDIDATES)]

    def target(self, scope: Scope) -> Path:
        files = self.files(scope)
        existing = [path for path in files if path.is_file()]
        if existing:
            # Read last among the JSON files: wins over its siblings.
            return sorted(existing, key=files.index)[-1]
        if scope == "user":
            return global_config_dir() / "opencode.json"
        return self.worktree / "opencode.json"

    def save(self, scope: Scope, permission: str, patterns: Iterable[str]) -> Path:
        path = self.target(scope)
        before = _digest(path)
        data = _read(path, permission, list(patterns))
        if before is None:
            _remember_created(path, _missing_folders(path))
        section = _permission_section(data)
        entry = section.get(permission)
        if not isinstance(entry, dict):
            entry = {} if entry is None else {"*": entry}
        for pattern in patterns:
            entry.pop(pattern, None)  # re-added last: the last matching rule wins
            entry[pattern] = "allow"
        section[permission] = entry
        self._write(path, before, data)
        return path

    def saved(self) -> list[Approval]:
        found: list[Approval] = []
        scopes: tuple[Scope, ...] = ("project", "user")
        for scope in scopes:
            for path in self.files(scope):
                found.extend(_allow_rules(path, scope))
        return found

    def remove(self, approval: Approval) -> None:
        path = approval.source
        if path is None:
            raise SaveError("the rule names no config file")
        before = _digest(path)
        data = _read(path, approval.rule.permission, None)
        section = _permission_section(data)
        rule = approval.rule
        entry = section.get(rule.permission)
        if isinstance(entry, dict) and entry.get(rule.pattern) == "allow":
            del entry[rule.pattern]
            if not entry:
                del section[rule.permission]
        elif entry == "allow" and rule.pattern == "*":
            del section[rule.permission]
        else:
            raise SaveError(f"{path} no longer has that rule")
        if not section:
            del data["permission"]  # an empty section configures nothing
        if str(path) in _created() and set(data) <= {"$schema"}:
            try:
                path.unlink()
            except OSError as error:
                raise SaveError(f"could not remove {path}: {error.strerror or error}") from error
            self._wrote(path, before, None)
            _forget_created(path)
            _remove_created_folders(path)
            return
        self._write(path, before, data)

    def _write(self, path: Path, before: Digest, data: dict[str, Any]) -> None:
        self._wrote(path, before, _write(path, data))

    def _wrote(self, path: Path, before: Digest, after: Digest) -> None:
        self.writes.setdefault(Path(os.path.abspath(path)), []).append((before, after))
        self.on_written(path)


def _digest(path: Path) -> Digest:
    import hashlib  # these run when a person saves a rule, not for every listing

    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _read(path: Path, permission: str, patterns: list[str] | None) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {"$schema": SCHEMA}
    except OSError as error:
        raise SaveError(f"could not read {path}: {error.strerror or error}") from error
    try:
        data = json.loads(text)
    except ValueError:
        try:
            jsonc.parse(text)
        except jsonc.ParseError as error:
            raise SaveError(f"{path} does not parse ({error}); fix it first") from error
        hint = ""
        if patterns:
            example = json.dumps({"permission": {permission: dict.fromkeys(patterns, "allow")}})
            hint = f"; add {example} to it by hand"
        raise SaveError(
            f"{path} has comments or trailing commas, which toolhost does not rewrite{hint}"
        ) from None
    if not isinstance(data, dict):
        raise SaveError(f"{path} does not hold a JSON object")
    return data


def _permission_section(data: dict[str, Any]) -> dict[str, Any]:
    section = data.get("permission")
    if isinstance(section, str):  # one action for everything: keep it as the first rule
        section = {"*": section}
    elif not isinstance(section, dict):
        section = {}
    data["permission"] = section
    return section


def _write(path: Path, data: dict[str, Any]) -> str:
    """Writes ``data`` as JSON; returns the hash of the bytes written."""
    import hashlib

    from tools.fsio.text import atomic_write

    raw = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        os.makedirs(path.parent, exist_ok=True)
        atomic_write(path, raw, None)
    except OSError as error:
        raise SaveError(f"could not write {path}: {error.strerror or error}") from error
    return hashlib.sha1(raw).hexdigest()


# --- which files (and sections) toolhost created, so removing the last rule removes them --


def _created_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("toolhost")) / "created.json"


def _created() -> list[str]:
    """The config files toolhost created to save a rule in (and did not remove yet)."""
    try:
        data = json.loads(_created_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in data if isinstance(item, str)] if isinstance(data, list) else []


def _store_created(entries: list[str]) -> None:
    # Best effort: without the record a file toolhost created is only kept, never lost.
    from tools.fsio.text import atomic_write

    with contextlib.suppress(OSError):
        path = _created_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, json.dumps(entries, indent=2).encode("utf-8"), None)


def _missing_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet (the write makes them), deepest first."""
    missing = []
    folder = path.parent
    while folder != folder.parent and not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return missing


def _remember_created(path: Path, folders: list[Path]) -> None:
    """Records ``path`` and the folders made for it (a folder's entry ends with a slash)."""
    entries = _created()
    new = [e for e in (str(path), *(os.path.join(f, "") for f in folders)) if e not in entries]
    if new:
        _store_created([*entries, *new])


def _remove_created_folders(path: Path) -> None:
    """Removes the folders toolhost made for ``path`` that are empty now, deepest first."""
    entries = _created()
    mine = [e for e in entries if e.endswith(os.sep) and str(path).startswith(e)]
    for entry in sorted(mine, key=len, reverse=True):
        with contextlib.suppress(OSError):  # not empty: someone else's files are in it
            os.rmdir(entry)
    _store_created([e for e in entries if e not in mine or os.path.isdir(e)])


def _forget_created(path: Path) -> None:
    entries = _created()
    if str(path) in entries:
        _store_created([e for e in entries if e != str(path)])


def _allow_rules(path: Path, scope: Scope) -> list[Approval]:
    """The allow rules in one config file (unreadable files have none to list)."""
    try:
        parsed = jsonc.parse(path.read_text(encoding="utf-8-sig")).value
    except (OSError, UnicodeError, jsonc.ParseError):
        return []
    section = parsed.get("permission") if isinstance(parsed, dict) else None
    if not isinstance(section, dict):
        return []
    found: list[Approval] = []
    for permission, value in section.items():
        pairs = value.items() if isinstance(value, dict) else [("*", value)]
        for pattern, action in pairs:
            if action == "allow":
                label = describe_patterns(permission, [pattern])
                rule = Rule(permission, pattern, "allow")
                found.append(Approval(rule, scope, label, source=path))
    return found
