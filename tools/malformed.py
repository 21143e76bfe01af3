"""Arguments no schema catches but no file system or process accepts.

Checked before a tool's schema, for every tool: a lone surrogate (JSON's ``"\\ud800"``)
cannot be written to a file or passed to a process; a NUL byte ends a C string, so a
path or a command containing one means something other than it says; a path longer
than ``PATH_MAX`` cannot be opened.  Each is reported as ``invalid_arguments`` naming
the field, instead of surfacing later as an ``internal`` fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Fields whose value is file content: a NUL byte is just a character there.
TEXT_FIELDS = frozenset({"content", "oldString", "newString", "patchText", "text"})
# Fields whose value names a file or folder.
PATH_FIELDS = frozenset({"filePath", "path", "movePath", "workdir", "directory", "cwd"})
PATH_MAX = 4096  # bytes, Linux's limit for a whole path
NAME_MAX = 255  # bytes, for one component
MAX_DEPTH = 32


def problems(args: Any) -> list[tuple[str, str]]:
    """``(field, problem)`` for every malformed string in ``args`` (a JSON value)."""
    return list(_walk(args, ""))


def _walk(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > MAX_DEPTH:
        yield where or "(arguments)", f"is nested more than {MAX_DEPTH} levels deep"
        return
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            field = f"{where}.{name}" if where else name
            yield from _key_problems(name, field)
            yield from _walk(item, field, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{where}[{index}]", depth + 1)
    elif isinstance(value, str):
        yield from _string_problems(value, where)


def _key_problems(key: str, field: str) -> Iterator[tuple[str, str]]:
    if _lone_surrogate(key) is not None:
        yield field, "its name contains an unpaired surrogate, which is not valid Unicode text"


def _string_problems(text: str, field: str) -> Iterator[tuple[str, str]]:
    name = field.rsplit(".", 1)[-1].split("[", 1)[0]
    position = _lone_surrogate(text)
    if position is not None:
        code = f"\\u{ord(text[position]):04x}"
        yield (
            field,
            f"contains an unpaired surrogate ({code}) at character {position}, which is not "
            "valid Unicode text and cannot be written to a file or passed to a command",
        )
        return
    if name not in TEXT_FIELDS and "\0" in text:
        yield (
            field,
            f"contains a NUL byte (\\u0000) at character {text.index(chr(0))}; "
            + ("a path" if name in PATH_FIELDS else "this field")
            + " cannot contain one",
        )
        return
    if name in PATH_FIELDS:
        size = len(text.encode("utf-8"))
        if size > PATH_MAX:
            yield field, f"is {size} bytes long; a path is at most {PATH_MAX} bytes"
            return
        longest = max((len(part.encode("utf-8")) for part in text.split("/")), default=0)
        if longest > NAME_MAX:
            yield (
                field,
                f"has a file or folder name of {longest} bytes; a name is at most {NAME_MAX}",
            )


def _lone_surrogate(text: str) -> int | None:
    """The index of the first unpaired surrogate, else None (fast path: none at all)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None
