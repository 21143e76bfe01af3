"""The tool shell: validation messages, error kinds, result coercion, truncation."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from tools import truncation
from tools.config.effective import Config, ToolOutputLimits
from tools.errors import NotFoundError, ToolError
from tools.host import ToolHost
from tools.tool import Annotations, define


class EchoArgs(BaseModel):
    text: str = Field(description="What to echo back")
    times: int = Field(default=1, ge=1, description="How often")
    mode: str | None = Field(default=None, description="Optional mode")


async def echo(args: EchoArgs, ctx) -> str:
    return "\n".join([args.text] * args.times)


async def broken(args: EchoArgs, ctx) -> str:
    raise RuntimeError("boom")


async def missing(args: EchoArgs, ctx) -> str:
    raise NotFoundError("No such thing: x. Try another name.")


async def self_truncating(args: EchoArgs, ctx) -> dict:
    return {"output": "y\n" * 5000, "metadata": {"truncated": False}}


def make_host(worktree: Path, **config) -> ToolHost:
    tools = [
        define("echo", parameters=EchoArgs, execute=echo, description="Echo."),
        define("broken", parameters=EchoArgs, execute=broken, description="Broken."),
        define("missing", parameters=EchoArgs, execute=missing, description="Missing."),
        define("selfcut", parameters=EchoArgs, execute=self_truncating, description="Cut."),
    ]
    return ToolHost(worktree, tools=tools, config=Config(**config))


async def test_invalid_arguments_name_each_field_and_ask_for_a_rewrite(worktree: Path) -> None:
    result = await make_host(worktree).execute("echo", {"times": 0})
    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    lines = result.output.splitlines()
    assert lines[0] == "The echo tool was called with invalid arguments:"
    assert (
        lines[1] == "- text: is required but was not given; expected a string (What to echo back)"
    )
    assert lines[2].startswith("- times: input should be greater than or equal to 1 (got 0)")
    assert lines[-1] == "Please rewrite the input so it satisfies the expected schema."
    assert "pydantic" not in result.output and "errors.pydantic.dev" not in result.output


async def test_non_object_arguments_are_explained(worktree: Path) -> None:
    result = await make_host(worktree).execute("echo", ["not", "an", "object"])
    assert result.metadata["error"] == "invalid_arguments"
    assert "must be a JSON object of named arguments" in result.output


async def test_numbers_given_as_strings_are_accepted(worktree: Path) -> None:
    result = await make_host(worktree).execute("echo", {"text": "a", "times": "2"})
    assert not result.is_error
    assert result.output == "a\na"


async def test_tool_error_keeps_its_kind(worktree: Path) -> None:
    result = await make_host(worktree).execute("missing", {"text": "a"})
    assert result.is_error
    assert result.metadata == {"error": "not_found"}
    assert result.output == "No such thing: x. Try another name."


async def test_unexpected_exception_is_internal_and_logged(
    worktree: Path, caplog: pytest.LogCaptureFixture
) -> None:
    result = await make_host(worktree).execute("broken", {"text": "a"})
    assert result.is_error
    assert result.metadata["error"] == "internal"
    assert "RuntimeError: boom" in result.output
    assert "Traceback" not in result.output
    assert any("broken" in record.getMessage() for record in caplog.records)


async def test_unknown_tool_lists_available_ids(worktree: Path) -> None:
    result = await make_host(worktree).execute("frobnicate", {})
    assert result.is_error
    assert result.metadata["error"] == "unknown_tool"
    assert "unavailable tool 'frobnicate'" in result.output
    assert "Available tools: broken, echo, missing, selfcut." in result.output


async def test_case_only_mismatch_runs_the_real_tool(worktree: Path) -> None:
    result = await make_host(worktree).execute("ECHO", {"text": "hi"})
    assert not result.is_error
    assert result.output == "hi"


async def test_disabled_tool_is_refused_and_unlisted(worktree: Path) -> None:
    host = make_host(worktree, enabled={"echo": False})
    assert "echo" not in [t.id for t in host.offered()]
    result = await host.execute("echo", {"text": "hi"})
    assert result.is_error
    assert result.metadata["error"] == "permission_denied"
    assert "disabled" in result.output


async def test_long_output_is_truncated_and_saved(worktree: Path) -> None:
    result = await make_host(worktree).execute("echo", {"text": "line", "times": 2500})
    assert result.metadata["truncated"] is True
    saved = Path(result.metadata["outputPath"])
    assert saved.read_text() == "\n".join(["line"] * 2500)
    assert result.output.startswith("line\n" * 10)
    assert "...500 lines truncated..." in result.output
    assert result.output.endswith(
        "Use Grep to search the full content or Read with offset/limit to view specific sections."
    )


async def test_configured_limits_apply(worktree: Path) -> None:
    host = make_host(worktree, tool_output=ToolOutputLimits(max_lines=3, max_bytes=1000))
    result = await host.execute("echo", {"text": "x", "times": 5})
    assert result.output.startswith("x\nx\nx\n\n...2 lines truncated...")


async def test_short_output_is_not_truncated_and_writes_nothing(worktree: Path) -> None:
    result = await make_host(worktree).execute("echo", {"text": "x"})
    assert result.metadata == {"truncated": False}
    assert not truncation.output_dir().exists() or not any(truncation.output_dir().iterdir())


async def test_a_tool_that_truncates_itself_is_left_alone(worktree: Path) -> None:
    result = await make_host(worktree).execute("selfcut", {"text": "x"})
    assert result.metadata == {"truncated": False}
    assert result.output.count("\n") == 5000


def test_byte_limit_cuts_before_the_line_that_overflows() -> None:
    text = "\n".join(["é" * 100] * 10)  # 200 bytes per line
    cut = truncation.truncate_output(text, max_lines=100, max_bytes=450)
    assert cut.truncated
    preview = cut.text.split("\n\n")[0]
    assert preview == "\n".join(["é" * 100] * 2)
    assert f"...{len(text.encode()) - 401} bytes truncated..." in cut.text


def test_tail_direction_keeps_the_end() -> None:
    cut = truncation.truncate_output(
        "\n".join(str(i) for i in range(10)), max_lines=2, direction="tail"
    )
    assert cut.text.startswith("...8 lines truncated...")
    assert cut.text.endswith("\n\n8\n9")


def test_task_hint_when_task_is_available() -> None:
    cut = truncation.truncate_output("a\n" * 10, max_lines=2, task_available=True)
    assert "Use the Task tool to have explore agent process this file" in cut.text


def test_old_saved_outputs_are_removed() -> None:
    directory = truncation.output_dir()
    directory.mkdir(parents=True, exist_ok=True)
    old, fresh = directory / "tool_old", directory / "tool_new"
    old.write_text("x")
    fresh.write_text("y")
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (eight_days_ago, eight_days_ago))
    assert truncation.cleanup_old_outputs(force=True) == 1
    assert not old.exists() and fresh.exists()


def test_define_rejects_sync_execute() -> None:
    def sync_execute(args, ctx):
        return "x"

    with pytest.raises(TypeError, match="async"):
        define("bad", execute=sync_execute, description="x")  # type: ignore[arg-type]


def test_wire_shape_of_a_tool() -> None:
    tool = define(
        "echo",
        parameters=EchoArgs,
        execute=echo,
        kind="think",
        annotations=Annotations(read_only=True),
        description="Echo.",
    )
    wire = tool.to_wire()
    assert wire["id"] == "echo" and wire["kind"] == "think"
    assert wire["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert wire["parameters"]["required"] == ["text"]
    assert wire["parameters"]["properties"]["mode"] == {
        "type": "string",
        "description": "Optional mode",
    }


async def test_progress_updates_are_rate_limited_and_the_latest_wins(worktree: Path) -> None:
    from tests.conftest import RecordingEditor

    async def chatty(args: EchoArgs, ctx) -> str:
        for i in range(50):
            ctx.metadata(metadata={"i": i})
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.15)
        return "done"

    editor = RecordingEditor()
    host = ToolHost(
        worktree, tools=[define("chatty", parameters=EchoArgs, execute=chatty, description="x")]
    )
    result = await host.execute("chatty", {"text": "x"}, editor=editor)
    assert result.output == "done"
    seen = [u["metadata"]["i"] for u in editor.updates]
    assert seen[0] == 0 and seen[-1] == 49
    assert len(seen) < 10  # 250 ms of updates at most every 100 ms


async def test_tool_errors_are_not_confused_with_cancellation(worktree: Path) -> None:
    async def slow(args: EchoArgs, ctx) -> str:
        await asyncio.sleep(10)
        return "never"

    host = ToolHost(
        worktree, tools=[define("slow", parameters=EchoArgs, execute=slow, description="x")]
    )
    task = asyncio.ensure_future(host.execute("slow", {"text": "x"}))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_tool_error_default_kind() -> None:
    assert ToolError("x").kind == "failed"


# --- the tail cut of a command's output (OpenCode 1.18.33's shell tool) ---------------------


def test_tail_cut_keeps_whole_lines_from_the_end() -> None:
    cut = truncation.truncate_tail("a\nb\nc\nd", max_lines=2, max_bytes=100)
    assert cut.truncated and cut.output_path is not None
    assert cut.text == f"...output truncated...\n\nFull output saved to: {cut.output_path}\n\nc\nd"
    assert Path(cut.output_path).read_text() == "a\nb\nc\nd"


def test_tail_cut_within_the_limits_changes_nothing() -> None:
    assert truncation.truncate_tail("a\nb", max_lines=2, max_bytes=3) == truncation.Truncated(
        "a\nb", False
    )


def test_tail_cut_of_one_huge_line_keeps_its_end_at_a_character_boundary() -> None:
    cut = truncation.truncate_tail("x" + "é" * 10, max_lines=5, max_bytes=5)
    # é is two bytes: the last 5 bytes start inside a character, which is skipped.
    assert cut.text.endswith("\n\néé")


def test_tail_cut_by_bytes_stops_at_the_line_that_does_not_fit() -> None:
    cut = truncation.truncate_tail("long line\nab\ncd", max_lines=10, max_bytes=6)
    assert cut.text.endswith("\n\nab\ncd")
