"""The scenario every agent behind ``toolhost acp`` runs: a two-file patch, then a command
that writes outside the project; and what the tests check of it.

Agents that also ask their own permission for an MCP call (claude-agent-acp, codex-acp,
Gemini CLI) have those asks allowed; toolhost's are told apart by their tool call id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.acp.client import PATCH, AcpClient, proxy, stderr_of
from tests.acp.schema import validate_sent
from tests.scripted_model import Reply, Step, ToolCall


async def prompt_once(
    agent: list[str],
    project: Path,
    env: dict[str, str],
    tmp_path: Path,
    flags: tuple[str, ...],
    answer: str,
) -> AcpClient:
    """One session through ``toolhost acp [flags] -- agent``, one prompt answered to its end
    (toolhost's reviews answered ``answer``), everything the proxy sent valid ACP."""
    async with proxy(agent, project, env, tmp_path, options=flags, choose=choose(answer)) as client:
        await client.initialize()
        session = await client.new_session(project)
        result = await client.prompt(session, "Change x and add y")
        assert result["stopReason"] == "end_turn", stderr_of(tmp_path)
    validate_sent(client.sent())
    return client


def ours(client: AcpClient) -> list[dict[str, Any]]:
    """toolhost's reviews among the permission requests."""
    return [
        p for p in client.permission_requests if p["toolCall"]["toolCallId"].startswith("toolhost-")
    ]


def choose(answer: str) -> Any:
    """``answer`` for toolhost's reviews, but no "run again" with more access; the agent's
    own ask for the MCP call allowed once."""

    def chooser(params: dict[str, Any]) -> str | None:
        if not params["toolCall"]["toolCallId"].startswith("toolhost-"):
            return next(o["optionId"] for o in params["options"] if o["kind"] == "allow_once")
        return "reject_once" if "run again" in params["toolCall"]["title"] else answer

    return chooser


def patch_then_bash(prefix: str, marker: Path) -> list[Step]:
    """toolhost's ``apply_patch`` then ``bash`` (named ``<prefix>apply_patch``, …)."""
    command = f"sh -c 'echo pwned > {marker}'"
    return [
        ToolCall(f"{prefix}apply_patch", {"patchText": PATCH}),
        ToolCall(f"{prefix}bash", {"command": command, "description": "write outside"}),
        Reply("Done."),
    ]


def assert_patch_reviewed_and_landed(client: AcpClient, project: Path, log: str) -> None:
    """Both files changed, after one review holding both diffs (``oldText`` null: new)."""
    assert (project / "a.py").read_text() == "x = 2\n", log
    assert (project / "b.py").read_text() == "y = 1\n"
    diffs = {item["path"]: item for item in ours(client)[0]["toolCall"]["content"]}
    assert diffs[str(project / "a.py")]["oldText"] == "x = 1\n"
    assert diffs[str(project / "b.py")]["oldText"] is None
    assert diffs[str(project / "b.py")]["newText"] == "y = 1\n"


def assert_sandboxed(marker: Path, result: str) -> None:
    assert not marker.exists(), "the sandbox let the command write outside the project"
    assert "sandbox" in result.lower(), result


def assert_rejected(client: AcpClient, project: Path, told: str, log: str) -> None:
    """One review, rejected: the disk as it was, and the model read why."""
    assert len(ours(client)) == 1, log
    assert (project / "a.py").read_text() == "x = 1\n"
    assert not (project / "b.py").exists()
    assert "rejected" in told, told
