"""The checkpoint requests' params and answers that are more than a call into
``tools.checkpoints`` (``checkpoints/restore``'s params, ``checkpoints/diff``), shared by
the editor connection and ``toolhost undo``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from tools.changes.diff import diff_texts
from tools.checkpoints.turns import Checkpoints
from tools.fsio import decode


@dataclass(frozen=True)
class RestoreParams:
    id: str
    dry_run: bool = False
    force: tuple[str, ...] = ()
    paths: tuple[str, ...] | None = None


def parse_restore(raw: Any) -> RestoreParams:
    method = "checkpoints/restore"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise JsonRpcInvalidParams(
            f"{method} needs params.id, a checkpoint id from checkpoints/list"
        )
    dry_run = raw.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise JsonRpcInvalidParams(f"{method}: dryRun must be a boolean")
    lists: dict[str, tuple[str, ...] | None] = {}
    for name in ("force", "paths"):
        value = raw.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise JsonRpcInvalidParams(f"{method}: {name} must be an array of paths")
        lists[name] = tuple(value) if value is not None else None
    return RestoreParams(raw["id"], dry_run, lists["force"] or (), lists["paths"])


def diff_of(checkpoints: Checkpoints, raw: Any) -> dict[str, Any]:
    """``{path, before, after, diff}``: a file's text before the checkpoint and now."""
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("id", "path")):
        raise JsonRpcInvalidParams("checkpoints/diff needs params.id and params.path (strings)")
    try:
        before, after = checkpoints.diff_texts(raw["id"], raw["path"])
    except (KeyError, FileNotFoundError):
        raise JsonRpcInvalidParams(
            f"checkpoints/diff: {raw['path']!r} is not a file of checkpoint {raw['id']!r}"
        ) from None
    old = decode(before).text if before is not None else None
    new = decode(after).text if after is not None else None
    diff = diff_texts(
        old or "", new or "", raw["path"], old_exists=old is not None, new_exists=new is not None
    )
    return {"path": raw["path"], "before": old, "after": new, "diff": diff.unified}
