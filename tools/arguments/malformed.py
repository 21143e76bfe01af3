"""Arguments no schema catches but no file system or process accepts.

Checked before a tool's schema, for every tool: a lone surrogate (JSON's ``"\\ud800"``)
cannot be written to a file or passed to a process; a NUL byte ends a C string, so a
path or a command containing one means something other than it says; a path longer
than ``PATH_MAX`` cannot be opened; a path with a control character (a newline, an
escape) would show a person something other than the file it names (a forged diff
header in a review, a title that hides the real name).  Each is reported as
``invalid_arguments`` naming the field, instead of surfacing later as an ``internal`` fault.
"""

from __future__ import annotations

from typing import Any

from tools.fsio.paths import control_character, visible

# Fields whose value is file content: a NUL byte is just a character there.
TEXT_FIELDS = frozenset({"content", "oldString", "newString", "patchText", "text"})
# Fields whose value names a file or folder.
PATH_FIELDS = frozenset({"filePath", "path", "movePath", "workdir", "directory", "cwd"})
PATH_MAX = 4096  # bytes, Linux's limit for a whole path
NAME_MAX = 255  # bytes, for one component
MAX_DEPTH = 32


def problems(args: Any) -> list[tuple[str, str]]:
    """``(field, problem)`` for every malformed string in ``args`` (a JSON value)."""
    # Appends to one list rather than nested generators: this runs before every call.
    found: list[tuple[str, str]] = []
    _walk(args, "", "", 0, found)
    return found


def _walk(value: Any, where: str, name: str, depth: int, found: list[tuple[str, str]]) -> None:
    """``name``: the key the value is under (its list's key for a list item)."""
    if depth > MAX_DEPTH:
        found.append((where or "(arguments)", f"is nested more than {MAX_DEPTH} levels deep"))
        return
    if isinstance(value, str):
        _string_problems(value, where, name, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            key = str(key)
            field = f"{where}.{key}" if where else key
            if _lone_surrogate(key) is not None:
                found.append(
                    (
                        field,
                        "its name contains an unpaired surrogate, which is not valid Unicode text",
                    )
                )
            _walk(item, field, key, depth + 1, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", name, depth + 1, found)


def _string_problems(text: str, field: str, name: str, found: list[tuple[str, str]]) -> None:
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = f"\\u{ord(text[error.start]):04x}"
        found.append(
            (
                field,
                f"contains an unpaired surrogate ({code}) at character {error.start}, which is "
                "not valid Unicode text and cannot be written to a file or passed to a command",
            )
        )
        return
    if name not in TEXT_FIELDS and "\0" in text:
        found.append(
            (
                field,
                f"contains a NUL byte (\\u0000) at character {text.index(chr(0))}; "
                + ("a path" if name in PATH_FIELDS else "this field")
                + " cannot contain one",
            )
        )
        return
    if name in PATH_FIELDS:
        found_control = control_character(text)
        if found_control is not None:
            found.append((field, control_problem(text, found_control)))
            return
        size = len(encoded)
        if size > PATH_MAX:
            found.append((field, f"is {size} bytes long; a path is at most {PATH_MAX} bytes"))
        elif size > NAME_MAX:  # only then can one name in it be too long
            longest = max(len(part) for part in encoded.split(b"/"))
            if longest > NAME_MAX:
                found.append(
                    (
                        field,
                        f"has a file or folder name of {longest} bytes; a name is at most "
                        f"{NAME_MAX}",
                    )
                )


def control_problem(path: str, index: int) -> str:
    """What is wrong with a path holding a control character at ``index``, for the model."""
    return (
        f"contains a control character ({visible(path[index])}) at character {index}; a path "
        f"cannot contain control characters (newlines, tabs, escapes): name the file "
        f"without them (as given: {visible(path)})"
    )


def _lone_surrogate(text: str) -> int | None:
    """The index of the first unpaired surrogate, else None (fast path: none at all)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None
