"""Instruction files a ``read`` brings along, as OpenCode 1.18.33 does.

Reading a file below the project directory appends the ``AGENTS.md`` (else ``CLAUDE.md``,
else ``CONTEXT.md``) of every folder between the file and the project directory, the
file's own folder first, as a ``<system-reminder>``. The project directory's own
instructions are not among them (OpenCode puts those in the system prompt). Each
instruction file comes along once per session; ``metadata.loaded`` lists the ones a read
brought.

``OPENCODE_DISABLE_CLAUDE_CODE`` or ``OPENCODE_DISABLE_CLAUDE_CODE_PROMPT`` leaves
``CLAUDE.md`` out, as in OpenCode.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NAMES = ("AGENTS.md", "CLAUDE.md", "CONTEXT.md")


@dataclass(frozen=True)
class Instruction:
    path: str
    content: str  # "Instructions from: <path>\n<text>"


def _names() -> tuple[str, ...]:
    if any(
        os.environ.get(flag, "").lower() in ("1", "true")
        for flag in ("OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_CLAUDE_CODE_PROMPT")
    ):
        return tuple(name for name in NAMES if name != "CLAUDE.md")
    return NAMES


def collect(
    path: Path | str,
    directory: Path,
    seen: set[str],
    unsaved_text: Callable[[Path], str | None] = lambda _: None,
) -> list[Instruction]:
    """The instruction files ``path`` brings that ``seen`` does not hold yet (added to it).

    ``path`` and ``directory`` are absolute and normalised. A file that is empty or
    cannot be read is marked seen and brings nothing.
    """
    root = str(directory)
    folder = os.path.dirname(str(path))
    if not folder.startswith(root + os.sep):
        return []  # the file is in the project directory itself, or outside it
    names = _names()
    found: list[Instruction] = []
    while folder.startswith(root + os.sep):
        instruction = _first_existing(folder, names)
        if instruction is not None and instruction != str(path) and instruction not in seen:
            seen.add(instruction)
            text = unsaved_text(Path(instruction))
            if text is None:
                text = _read(instruction)
            if text:
                found.append(Instruction(instruction, f"Instructions from: {instruction}\n{text}"))
        folder = os.path.dirname(folder)
    return found


def reminder(instructions: list[Instruction]) -> str:
    """The text appended to the read's output (empty when there is nothing to add)."""
    if not instructions:
        return ""
    body = "\n\n".join(instruction.content for instruction in instructions)
    return f"\n\n<system-reminder>\n{body}\n</system-reminder>"


def _first_existing(folder: str, names: tuple[str, ...]) -> str | None:
    for name in names:
        candidate = os.path.join(folder, name)
        if os.path.exists(candidate):
            return candidate
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""
