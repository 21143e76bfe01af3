"""The bash tool: real shells, real process trees, real permission asks."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor
from tools.bash import process
from tools.bash.shell import pick_shell, shell_argv
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.effective import Config, ToolOutputLimits
from tools.host import ToolHost
from tools.permission.rules import rules_from_config
from tools.result import ToolResult

NOTE_TAIL = (
    "If this command is expected to take longer and is not waiting for interactive input, "
    "retry with a larger timeout value in milliseconds.\n</shell_metadata>"
)


def make_host(worktree: Path, permission: dict[str, Any] | None = None) -> ToolHost:
    config = Config(rules=rules_from_config(permission)) if permission else Config()
    return ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=config)


async def bash(host: ToolHost, editor: RecordingEditor, command: str, **args: Any) -> ToolResult:
    return await host.execute(
        "bash",
        {"command": command, "description": "Runs a test command", **args},
        editor=editor,
        session_id="ses_bash",
    )


@pytest.fixture
async def mark():
    """A sleep duration no other process will have in its cmdline; whatever still
    sleeps that long when the test ends (a failed test, a test that keeps a
    background job) is killed, by pid."""
    value = f"{random.randint(100_000, 999_999)}.{random.randint(100, 999)}"
    yield value
    for pid in pids_running(value):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.1)  # let a pipe such a job held close while the loop runs


def pids_running(mark: str) -> list[int]:
    """Live (non-zombie) processes whose cmdline is `sleep <mark>`."""
    wanted = b"sleep\0" + mark.encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in cmdline and state != b"Z":
            found.append(int(name))
    return found


def our_zombies(besides: list[int] | tuple[int, ...] = ()) -> list[int]:
    """Zombie children of this test process, but ``besides``."""
    zombies = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == b"Z" and int(fields[1]) == os.getpid() and int(name) not in besides:
            zombies.append(int(name))
    return zombies


async def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the project, so outside it."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


# ---------------------------------------------------------------- results


async def test_echo_hello_returns_exactly_its_output(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "echo hello")
    assert not result.is_error
    assert result.output == "hello\n"
    assert result.title == "Runs a test command"
    sandbox = result.metadata.pop("sandbox")
    assert result.metadata == {
        "output": "hello\n",
        "exit": 0,
        "description": "Runs a test command",
        "truncated": False,
    }
    assert sandbox["mode"] == "auto"  # tests/tools/test_sandbox.py checks what it holds


async def test_a_non_zero_exit_is_not_an_error(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "echo failing; exit 3")
    assert not result.is_error
    assert result.metadata["exit"] == 3
    assert result.output == "failing\n"


async def test_stderr_is_merged_into_stdout_in_arrival_order(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "echo a; echo b >&2; echo c")
    assert result.output == "a\nb\nc\n"


async def test_empty_output_reads_no_output(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "true")
    assert result.output == "(no output)"
    assert result.metadata["exit"] == 0


async def test_stdin_is_empty_so_a_reader_does_not_wait(worktree: Path, editor) -> None:
    started = time.monotonic()
    result = await bash(make_host(worktree), editor, "cat; read line; echo done $?")
    assert time.monotonic() - started < 2
    assert result.output == "done 1\n"


async def test_runs_in_the_project_directory_with_a_non_interactive_env(
    worktree: Path, editor
) -> None:
    result = await bash(
        make_host(worktree), editor, 'pwd; echo "$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT"'
    )
    assert result.output == f"{worktree}\ncat cat 0\n"


async def test_negative_timeout_is_refused_without_running(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "touch ran", timeout=-5)
    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert result.output == "Invalid timeout value: -5. Timeout must be a positive number."
    assert not (worktree / "ran").exists()


async def test_description_is_optional_and_the_title_is_then_the_command(
    worktree: Path, editor
) -> None:
    # OpenCode 1.18.33 has no description parameter; its title is the command.
    result = await make_host(worktree).execute("bash", {"command": "echo hi"}, editor=editor)
    assert not result.is_error, result.output
    assert result.output == "hi\n"
    assert result.title == "echo hi"


async def test_long_output_is_truncated_with_the_full_text_saved(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "seq 1 5000")
    full = "".join(f"{i}\n" for i in range(1, 5001))
    assert result.metadata["truncated"] is True
    saved = result.metadata["outputPath"]
    assert Path(saved).read_text() == full
    # The tail is kept (the last 2000 lines; the split leaves an empty last one), after
    # OpenCode 1.18.33's marker.
    tail = "".join(f"{i}\n" for i in range(3002, 5001))
    assert result.output == f"...output truncated...\n\nFull output saved to: {saved}\n\n{tail}"
    assert result.metadata["output"] == full  # under the 30 000-character cap


async def test_a_single_huge_line_is_cut_to_its_end_never_dropped(worktree: Path, editor) -> None:
    command = "printf 'start'; head -c 200000 /dev/zero | tr '\\0' b; printf 'end'"
    result = await bash(make_host(worktree), editor, command)
    assert result.metadata["truncated"] is True
    kept = result.output.split("\n\n", 2)[2]
    assert kept == "b" * (50 * 1024 - 3) + "end"
    assert Path(result.metadata["outputPath"]).read_text().startswith("startbbb")


async def test_truncation_follows_the_tool_output_config(worktree: Path, editor) -> None:
    host = ToolHost(
        worktree,
        tools=[bash_module.tool],
        config=Config(tool_output=ToolOutputLimits(max_lines=3, max_bytes=51_200)),
    )
    result = await bash(host, editor, "seq 1 10")
    assert result.output.endswith("\n\n9\n10\n")  # three lines: the last is empty


async def test_metadata_output_is_capped_at_30000_characters(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "head -c 40000 /dev/zero | tr '\\0' a")
    assert result.metadata["output"] == "...\n\n" + "a" * 30_000  # the tail, as in 1.18.33
    assert result.output == "a" * 40_000  # the model's copy is not capped (under 50 KB)


async def test_utf8_split_across_writes_is_decoded_whole(worktree: Path, editor) -> None:
    # "€" is e2 82 ac: the first two bytes arrive, then 0.2 s later the last one.
    command = "printf '\\342\\202'; sleep 0.2; printf '\\254\\n'; printf '\\377\\n'"
    result = await bash(make_host(worktree), editor, command)
    assert result.output == "€\n\ufffd\n"  # an invalid byte is replaced, not fatal
    # Every update shows a prefix of the final text: no half character was shown.
    assert all(result.output.startswith(u["metadata"]["output"]) for u in editor.updates)


async def test_output_updates_stream_before_the_result(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "for i in 1 2 3; do echo $i; sleep 0.3; done")
    assert result.output == "1\n2\n3\n"
    outputs = [u["metadata"]["output"] for u in editor.updates]
    assert [o for o in outputs if o] == ["1\n", "1\n2\n", "1\n2\n3\n"]
    for update in editor.updates:
        assert update["title"] == "Runs a test command"
        assert update["metadata"]["description"] == "Runs a test command"


async def test_a_running_command_does_not_block_other_calls(worktree: Path, editor) -> None:
    host = make_host(worktree)
    (worktree / "a.txt").write_text("alpha\n")
    slow = asyncio.create_task(bash(host, editor, "sleep 2; echo slept"))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    read = await host.execute("read", {"filePath": "a.txt"}, editor=editor)
    assert time.monotonic() - started < 0.5
    assert "alpha" in read.output
    assert not slow.done()
    assert (await slow).output == "slept\n"


# ---------------------------------------------------------------- timeout, cancellation


async def test_timeout_kills_the_command_and_says_so(worktree: Path, editor) -> None:
    started = time.monotonic()
    result = await bash(make_host(worktree), editor, "echo before; sleep 5", timeout=500)
    assert time.monotonic() - started < 2
    assert not result.is_error
    assert result.output == (
        "before\n\n\n<shell_metadata>\n"
        "shell tool terminated command after exceeding timeout 500 ms. " + NOTE_TAIL
    )
    assert result.metadata["exit"] is None
    assert result.metadata["timedOut"] is True


async def test_the_default_timeout_says_so_too(
    worktree: Path, editor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default is an int (120000): Python 3.11's int has no is_integer(), and the note
    # failed the call with an AttributeError instead of telling the model (a long test run
    # through an agent got "The bash tool failed unexpectedly").
    import tools.builtin.bash as bash_tool

    monkeypatch.setattr(bash_tool, "DEFAULT_TIMEOUT_MS", 500)
    result = await bash(make_host(worktree), editor, "echo before; sleep 5")
    assert not result.is_error, result.output
    assert "exceeding timeout 500 ms" in result.output
    assert result.metadata["timedOut"] is True


def escapees(mark: str) -> str:
    """Children that try every way out of a process tree."""
    return (
        f"(setsid sleep {mark} &); "  # orphaned, own session
        f"(env -i /bin/sleep {mark} &); "  # orphaned, no marker in its environment
        f"setsid env -i /bin/sleep {mark} & "  # own session, no marker
        f"sleep {mark} & "  # a plain background job
        f"env -i setsid -f /bin/sleep {mark}; "  # all three: double fork, session, no marker
        f"{DAEMON.format(mark=mark)}; "  # a Python daemon: fork, setsid, fork, clean env
    )


DAEMON = (
    'python3 -c "import os\n'
    "if os.fork() == 0:\n os.setsid()\n if os.fork() == 0:\n"
    "  os.execve('/bin/sleep', ['sleep', '{mark}'], {{}})\n os._exit(0)\n"
    'os.wait()"'
)


async def test_without_the_supervisor_a_double_forked_process_escapes(
    worktree: Path, mark: str
) -> None:
    """The defence off: started directly (no plan), ``env -i setsid -f`` outlives a
    cancel; the same command under the supervisor does not (the tests below)."""
    run = asyncio.create_task(
        process.run(
            ["bash", "-c", f"env -i setsid -f /bin/sleep {mark}; sleep {mark}"],
            cwd=worktree,
            env=dict(os.environ),
            timeout=30,
        )
    )
    await wait_for(lambda: len(pids_running(mark)) == 2)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert len(pids_running(mark)) == 1  # the escapee (the mark fixture kills it)


async def test_timeout_ends_background_and_escaped_children_too(
    worktree: Path, editor, mark: str
) -> None:
    command = escapees(mark) + f"sleep {mark}"
    earlier = our_zombies()  # another test's unreaped child is not this call's
    result = await bash(make_host(worktree), editor, command, timeout=300)
    assert result.metadata["timedOut"] is True
    assert pids_running(mark) == []
    assert our_zombies(besides=earlier) == []


async def test_cancellation_leaves_no_process_and_no_zombie(
    worktree: Path, editor, mark: str
) -> None:
    command = escapees(mark) + f"sleep {mark}"
    earlier = our_zombies()
    task = asyncio.create_task(bash(make_host(worktree), editor, command))
    await wait_for(lambda: len(pids_running(mark)) == 7)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pids_running(mark) == []
    assert our_zombies(besides=earlier) == []
    assert "User aborted the command" in editor.updates[-1]["metadata"]["output"]


async def test_a_background_job_does_not_hold_the_call(worktree: Path, editor, mark: str) -> None:
    started = time.monotonic()
    result = await bash(make_host(worktree), editor, f"sleep {mark} & echo started")
    assert time.monotonic() - started < 1.5
    assert result.output == "started\n"
    assert len(pids_running(mark)) == 1  # left running, as a server would be


async def test_capture_keeps_head_and_tail_of_runaway_output(worktree: Path) -> None:
    finished = await process.run(
        ["seq", "1", "100000"], cwd=worktree, env=dict(os.environ), timeout=10, capture_limit=1000
    )
    assert finished.exit == 0
    assert finished.output.startswith("1\n2\n3\n")
    assert finished.output.endswith("99999\n100000\n")
    assert "characters of output omitted" in finished.output
    assert len(finished.output) < 1100


# ---------------------------------------------------------------- permissions


async def test_each_command_is_asked_with_its_text_and_arity_glob(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject")
    host = make_host(worktree, {"bash": "ask"})
    result = await bash(host, editor, "git checkout main && npm run dev x | grep y")
    assert result.metadata["error"] == "permission_rejected"
    (ask,) = editor.asks
    assert ask.permission == "bash"
    assert ask.patterns == ["git checkout main", "npm run dev x", "grep y"]
    assert ask.always == ["git checkout *", "npm run dev *", "grep *"]
    assert ask.metadata["command"] == "git checkout main && npm run dev x | grep y"


async def test_a_rejected_command_does_not_run(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, {"bash": "ask"}), editor, "touch marker")
    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    assert not (worktree / "marker").exists()


async def test_a_denied_command_anywhere_in_the_line_stops_it_all(worktree: Path, editor) -> None:
    host = make_host(worktree, {"bash": {"*": "allow", "rm *": "deny"}})
    (worktree / "keep").write_text("x")
    result = await bash(host, editor, 'touch marker && echo "$(rm keep)"')
    assert result.metadata["error"] == "permission_denied"
    assert (worktree / "keep").exists()
    assert not (worktree / "marker").exists()


async def test_always_approves_the_arity_prefix(worktree: Path) -> None:
    editor = RecordingEditor(reply="always")
    host = make_host(worktree, {"bash": "ask"})
    await bash(host, editor, "echo one")
    await bash(host, editor, "echo two")
    assert len(editor.asks) == 1
    await bash(host, editor, "printf x")
    assert len(editor.asks) == 2


async def test_duplicate_commands_are_asked_once(worktree: Path) -> None:
    editor = RecordingEditor()
    await bash(make_host(worktree, {"bash": "ask"}), editor, "echo a; echo a; echo b")
    assert editor.asks[0].patterns == ["echo a", "echo b"]
    assert editor.asks[0].always == ["echo *"]


async def test_cd_alone_is_not_asked_for(worktree: Path) -> None:
    editor = RecordingEditor()
    (worktree / "sub").mkdir()
    result = await bash(make_host(worktree, {"bash": "ask"}), editor, "cd sub")
    assert editor.asks == []
    assert result.output == "(no output)"


async def test_cd_outside_asks_external_directory_then_bash(worktree: Path, outside) -> None:
    editor = RecordingEditor()
    result = await bash(make_host(worktree, {"bash": "ask"}), editor, f"cd {outside} && ls")
    assert [a.permission for a in editor.asks] == ["external_directory", "bash"]
    assert editor.asks[0].patterns == [f"{outside}/*"]
    assert editor.asks[0].always == [f"{outside}/*"]
    assert editor.asks[1].patterns == ["ls"]
    assert result.output == "(no output)"


async def test_under_default_rules_only_the_outside_path_is_asked(
    worktree: Path, outside, editor
) -> None:
    (outside / "old.txt").write_text("x")
    await bash(make_host(worktree), editor, f'rm -f "{outside}/old.txt" "{outside}/missing"')
    (ask,) = editor.asks
    assert ask.permission == "external_directory"
    assert ask.patterns == [f"{outside}/*"]  # a file's directory; a missing path is ignored
    assert not (outside / "old.txt").exists()


async def test_paths_inside_the_project_and_flags_are_not_asked(worktree: Path, editor) -> None:
    (worktree / "f").write_text("x")
    await bash(make_host(worktree), editor, "chmod +x f && cat -n f && mkdir -p d && cp f d/")
    assert editor.asks == []


async def test_a_symlink_leading_out_of_the_project_is_external(
    worktree: Path, outside, editor
) -> None:
    (outside / "secret").write_text("s")
    (worktree / "link").symlink_to(outside / "secret")
    await bash(make_host(worktree), editor, "cat link")
    assert editor.asks[0].patterns == [f"{outside}/*"]


async def test_a_rejected_external_directory_stops_before_bash(worktree: Path, outside) -> None:
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, {"bash": "ask"}), editor, f"rm -r {outside}")
    assert [a.permission for a in editor.asks] == ["external_directory"]
    assert result.metadata["error"] == "permission_rejected"
    assert outside.exists()


async def test_workdir_outside_the_project_asks_and_runs_there(
    worktree: Path, outside, editor
) -> None:
    result = await bash(make_host(worktree), editor, "pwd", workdir=str(outside))
    (ask,) = editor.asks
    assert ask.permission == "external_directory"
    assert ask.patterns == [f"{outside}/*"]
    assert result.output == f"{outside}\n"


async def test_relative_workdir_and_paths_resolve_against_it(worktree: Path, editor) -> None:
    (worktree / "sub").mkdir()
    result = await bash(make_host(worktree), editor, "touch made && pwd", workdir="sub")
    assert result.output == f"{worktree / 'sub'}\n"
    assert (worktree / "sub" / "made").exists()
    assert editor.asks == []


async def test_a_missing_workdir_is_not_found(worktree: Path, editor) -> None:
    result = await bash(make_host(worktree), editor, "pwd", workdir="nope")
    assert result.is_error
    assert result.metadata["error"] == "not_found"
    assert f"The workdir {worktree / 'nope'} does not exist" in result.output


async def test_a_parse_failure_asks_with_the_whole_text_and_offers_no_always(
    worktree: Path,
) -> None:
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, {"bash": "ask"}), editor, 'echo "unterminated')
    (ask,) = editor.asks
    assert ask.patterns[0] == 'echo "unterminated'
    assert ask.always == []
    assert ask.metadata["parseError"] is True
    assert result.metadata["error"] == "permission_rejected"


async def test_a_parse_failure_cannot_smuggle_a_denied_command(worktree: Path, editor) -> None:
    # bash runs the first line before it reaches the broken quote on the second.
    (worktree / "victim").mkdir()
    host = make_host(worktree, {"bash": {"*": "allow", "rm *": "deny"}})
    result = await bash(host, editor, 'rm -rf victim\necho "oops')
    assert result.metadata["error"] == "permission_denied"
    assert (worktree / "victim").exists()


async def test_a_parse_failure_under_allow_rules_runs_and_reports_the_error(
    worktree: Path, editor
) -> None:
    result = await bash(make_host(worktree), editor, 'echo "unterminated')
    assert not result.is_error
    assert result.metadata["exit"] == 2
    assert "unexpected EOF" in result.output


# ---------------------------------------------------------------- shell choice


@pytest.mark.parametrize(
    ("shell", "expected"),
    [("/usr/bin/fish", "/bin/bash"), ("/usr/bin/nu", "/bin/bash"), ("/bin/sh", "/bin/sh")],
)
def test_the_shell_is_shell_unless_it_is_not_posix(monkeypatch, shell, expected) -> None:
    monkeypatch.setenv("SHELL", shell)
    assert pick_shell() == expected


def test_startup_files_are_skipped() -> None:
    assert shell_argv("ls", "/bin/bash") == [
        "/bin/bash",
        "--noprofile",
        "--norc",
        "-c",
        "ls",
    ]
    assert shell_argv("ls", "/usr/bin/zsh") == ["/usr/bin/zsh", "-f", "-c", "ls"]
    assert shell_argv("ls", "/bin/dash") == ["/bin/dash", "-c", "ls"]


def test_the_tool_declares_itself_as_destructive_execution() -> None:
    tool = bash_module.tool
    assert tool.kind == "execute"
    assert tool.annotations.destructive and tool.annotations.open_world
    assert tool.schema is not None
    assert tool.schema["required"] == ["command"]
