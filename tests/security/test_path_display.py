"""A path is what a person sees: no control character can change what a review shows.

The attack: a ``filePath`` holding a newline puts a line of the attacker's choosing
into the ask's patch text, ``+++ b/README.md``, so the review seems to change another
file.  With the defence off (control characters let through, nothing quoted) the
forged header is in the ask; with it on, the call is refused before any ask, with an
error naming the character, and a name that still reaches a diff is quoted visibly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RecordingEditor
from tools import context
from tools.arguments import malformed
from tools.changes import diff
from tools.config.effective import Config
from tools.host import ToolHost
from tools.permission import external
from tools.permission.rules import rules_from_config

FORGED = "x.txt\n+++ b/README.md"


def ask_every_edit(worktree: Path) -> ToolHost:
    config = Config(rules=rules_from_config({"edit": "ask", "external_directory": "allow"}))
    return ToolHost(worktree, config=config, read_before_write=False)


def defence_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Control characters pass the checks and are shown as they are, as before."""
    for module in (malformed, external):
        monkeypatch.setattr(module, "control_character", lambda text: None)
    for module in (diff, context):
        monkeypatch.setattr(module, "visible", lambda text: text)


CALLS = {
    "write": lambda: ("write", {"filePath": FORGED, "content": "hello\n"}),
    "patch": lambda: (
        "apply_patch",
        {
            "patchText": "*** Begin Patch\n*** Add File: x.txt\x0b+++ b/README.md\n+hello\n"
            "*** End Patch"
        },
    ),
}


async def test_a_newline_in_a_path_forges_a_header_without_the_defence(
    worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defence_off(monkeypatch)
    editor = RecordingEditor("reject")
    await ask_every_edit(worktree).execute(*CALLS["write"](), editor=editor)
    assert editor.asks, "the write reached its ask"
    shown = editor.asks[0].metadata["diff"]
    assert "\n+++ b/README.md\n" in shown  # the attack works: a second file header


@pytest.mark.parametrize("call", CALLS)
async def test_a_control_character_in_a_path_is_refused_before_any_ask(
    worktree: Path, call: str
) -> None:
    editor = RecordingEditor("once")
    result = await ask_every_edit(worktree).execute(*CALLS[call](), editor=editor)
    assert result.is_error and result.metadata.get("error") == "invalid_arguments"
    assert "control character" in result.output, result.output
    assert editor.asks == []
    assert list(worktree.iterdir()) == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"filePath": "a\rb"}),
        ("edit", {"filePath": "a\x1b[2Kb", "oldString": "a", "newString": "b"}),
        ("glob", {"pattern": "*", "path": "sub\n"}),
        ("grep", {"pattern": "x", "path": "sub\u2028"}),
        ("list", {"path": "sub\x85"}),
    ],
)
async def test_every_path_argument_refuses_control_characters(
    worktree: Path, tool: str, args: dict[str, str]
) -> None:
    result = await ask_every_edit(worktree).execute(tool, args, editor=RecordingEditor())
    assert result.is_error and "control character" in result.output, result.output


def test_a_name_that_reaches_a_diff_is_quoted_visibly() -> None:
    shown = diff.diff_texts("", "hello\n", FORGED, old_exists=False).unified
    assert "+++ b/x.txt\\n+++ b/README.md\n" in shown
    assert "\n+++ b/README.md\n" not in shown
