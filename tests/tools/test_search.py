"""glob, grep and list on real trees with the real rg, and the rg runner they share."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tools.fsio.rg
from tests.conftest import RecordingEditor, Runner
from tools.builtin import glob, grep
from tools.builtin import list as list_tool
from tools.config.opencode import config_from_opencode
from tools.fsio.rg import Ripgrep
from tools.host import ToolHost

BASE_TIME = 1_700_000_000


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    # Only the tools under test, so these tests do not depend on the other built-ins.
    return ToolHost(worktree, tools=[glob.tool, grep.tool, list_tool.tool])


def make(path: Path, text: str | bytes = "", *, age: int | None = None) -> Path:
    """Write a file; ``age`` seconds before BASE_TIME sets its mtime (bigger is older)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    if age is not None:
        os.utime(path, (BASE_TIME - age, BASE_TIME - age))
    return path


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def rg_children() -> list[str]:
    """States of this process's rg children, zombies included (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if comm == "rg" and int(ppid) == os.getpid():
            found.append(state)
    return found


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


# --- glob -------------------------------------------------------------------------------


async def test_glob_lists_absolute_paths_newest_first(run: Runner, worktree: Path) -> None:
    make(worktree / "old.py", age=300)
    make(worktree / "src" / "new.py", age=10)
    make(worktree / "src" / "deep" / "mid.py", age=100)
    make(worktree / "notes.txt", age=1)

    result = await run("glob", {"pattern": "**/*.py"})

    assert not result.is_error, result.output
    assert result.output == "\n".join(
        [
            str(worktree / "src" / "new.py"),
            str(worktree / "src" / "deep" / "mid.py"),
            str(worktree / "old.py"),
        ]
    )
    assert result.title == "."
    assert result.metadata == {"count": 3, "truncated": False}


async def test_glob_in_a_sub_directory_titles_it_relative(run: Runner, worktree: Path) -> None:
    make(worktree / "src" / "a.ts")
    make(worktree / "other" / "b.ts")

    result = await run("glob", {"pattern": "*.ts", "path": "src"})

    assert result.output == str(worktree / "src" / "a.ts")
    assert result.title == "src"


async def test_glob_no_match(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt")

    result = await run("glob", {"pattern": "**/*.rs"})

    assert not result.is_error
    assert result.output == "No files found"
    assert result.metadata == {"count": 0, "truncated": False}


async def test_glob_caps_at_100_with_notice(run: Runner, worktree: Path) -> None:
    for i in range(150):
        make(worktree / "many" / f"f{i:03d}.txt", age=i)

    result = await run("glob", {"pattern": "**/*.txt"})

    lines = result.output.split("\n")
    assert len(lines) == 102
    assert lines[100] == ""
    assert lines[101] == (
        "(Results are truncated: showing first 100 results. "
        "Consider using a more specific path or pattern.)"
    )
    shown = lines[:100]
    assert len(set(shown)) == 100
    # The 100 kept (whichever rg found first) are ordered newest first.
    ages = [int(Path(line).stem[1:]) for line in shown]
    assert ages == sorted(ages)
    assert result.metadata == {"count": 100, "truncated": True}


async def test_glob_exactly_100_is_not_truncated(run: Runner, worktree: Path) -> None:
    for i in range(100):
        make(worktree / f"f{i:03d}.txt")

    result = await run("glob", {"pattern": "*.txt"})

    assert len(result.output.split("\n")) == 100
    assert result.metadata == {"count": 100, "truncated": False}


async def test_glob_respects_gitignore_in_a_git_repo(run: Runner, worktree: Path) -> None:
    git_init(worktree)
    make(worktree / ".gitignore", "build/\nsecret.py\n")
    make(worktree / "build" / "out.py")
    make(worktree / "secret.py")
    make(worktree / "kept.py")

    specific = await run("glob", {"pattern": "**/*.py"})
    everything = await run("glob", {"pattern": "**/*"})

    assert str(worktree / "build" / "out.py") not in specific.output
    assert str(worktree / "kept.py") in specific.output
    # A match-all pattern is not passed to rg, where it would override .gitignore.
    listed = set(everything.output.split("\n"))
    assert listed == {str(worktree / "kept.py"), str(worktree / ".gitignore")}


async def test_glob_respects_dot_ignore_without_git(run: Runner, worktree: Path) -> None:
    make(worktree / ".ignore", "generated/\n")
    make(worktree / "generated" / "big.js")
    make(worktree / "app.js")

    result = await run("glob", {"pattern": "**/*.js"})

    assert result.output == str(worktree / "app.js")


async def test_glob_includes_hidden_files_but_never_dot_git(run: Runner, worktree: Path) -> None:
    make(worktree / ".env.py")
    make(worktree / ".config" / "settings.py")
    make(worktree / ".git" / "hooks" / "hook.py")
    make(worktree / "vendored" / ".git" / "x.py")  # a nested repository's .git too

    # "?*" matches the .git directory itself, which would re-include it if it won.
    for pattern in ("**/*.py", "*", "?*", "**/.git/**"):
        result = await run("glob", {"pattern": pattern})
        assert ".git/" not in result.output, pattern

    result = await run("glob", {"pattern": "**/*.py"})
    assert set(result.output.split("\n")) == {
        str(worktree / ".env.py"),
        str(worktree / ".config" / "settings.py"),
    }


@pytest.mark.parametrize("placeholder", ["undefined", "null"])
async def test_glob_treats_undefined_path_as_omitted(
    run: Runner, worktree: Path, placeholder: str
) -> None:
    make(worktree / "a.md")

    result = await run("glob", {"pattern": "*.md", "path": placeholder})

    assert result.output == str(worktree / "a.md")
    assert result.title == "."


async def test_glob_path_must_be_a_directory(run: Runner, worktree: Path) -> None:
    file = make(worktree / "a.txt")

    result = await run("glob", {"pattern": "*", "path": str(file)})

    assert result.is_error
    assert result.output == f"glob path must be a directory: {file}"
    assert result.metadata["error"] == "failed"


async def test_glob_missing_path_is_not_found(run: Runner, worktree: Path) -> None:
    result = await run("glob", {"pattern": "*", "path": "nowhere"})

    assert result.is_error
    assert result.output == (
        f"glob path does not exist or is not accessible: {worktree / 'nowhere'}"
    )
    assert result.metadata["error"] == "not_found"


async def test_glob_invalid_pattern_names_the_problem(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt")

    result = await run("glob", {"pattern": "src/{a,b"})

    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert result.output.startswith('Invalid glob pattern "src/{a,b": ')
    assert "unclosed alternate group" in result.output


async def test_glob_asks_glob_permission(worktree: Path, editor: RecordingEditor) -> None:
    config = config_from_opencode({"permission": {"glob": "ask"}})
    host = ToolHost(worktree, config=config, tools=[glob.tool])

    await host.execute("glob", {"pattern": "*.py"}, editor=editor)

    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always) == ("glob", ["*.py"], ["*"])
    assert ask.metadata == {"pattern": "*.py", "path": None}


async def test_glob_outside_the_project_asks_external_directory(
    run: Runner, editor: RecordingEditor, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    make(outside / "x.py")
    editor.reply = "reject"

    result = await run("glob", {"pattern": "*.py", "path": str(outside)})

    assert result.is_error
    assert result.metadata["error"] == "permission_rejected"
    (ask,) = editor.asks
    assert ask.permission == "external_directory"
    assert ask.patterns == [f"{outside.as_posix()}/*"]


# --- grep -------------------------------------------------------------------------------


async def test_grep_groups_matches_by_file_newest_first(run: Runner, worktree: Path) -> None:
    old = make(worktree / "old.py", "def alpha():\n    pass\ndef beta():\n", age=500)
    new = make(worktree / "pkg" / "new.py", "x = 1\ndef gamma():\n", age=5)
    make(worktree / "none.py", "nothing here\n", age=1)

    result = await run("grep", {"pattern": r"def \w+"})

    assert not result.is_error, result.output
    assert result.output == "\n".join(
        [
            "Found 3 matches",
            f"{new}:",
            "  Line 2: def gamma():",
            "",
            f"{old}:",
            "  Line 1: def alpha():",
            "  Line 3: def beta():",
        ]
    )
    assert result.title == r"def \w+"
    assert result.metadata == {"matches": 3, "truncated": False}


async def test_grep_include_filters_files(run: Runner, worktree: Path) -> None:
    make(worktree / "a.ts", "needle\n")
    tsx = make(worktree / "b.tsx", "needle\n")
    make(worktree / "c.js", "needle\n")

    result = await run("grep", {"pattern": "needle", "include": "*.{tsx,rs}"})

    assert result.output == f"Found 1 matches\n{tsx}:\n  Line 1: needle"


async def test_grep_no_match(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt", "hay\n")

    result = await run("grep", {"pattern": "needle"})

    assert not result.is_error
    assert result.output == "No files found"
    assert result.metadata == {"matches": 0, "truncated": False}
    assert result.title == "needle"


async def test_grep_invalid_regex_names_the_problem(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt", "x\n")

    result = await run("grep", {"pattern": "foo(["})

    assert result.is_error
    assert result.metadata["error"] == "invalid_arguments"
    assert result.output.startswith('Invalid regex pattern "foo([": regex parse error:')
    assert "unclosed" in result.output


async def test_grep_invalid_include_glob(run: Runner, worktree: Path) -> None:
    make(worktree / "a.txt", "x\n")

    result = await run("grep", {"pattern": "x", "include": "*.{ts"})

    assert result.is_error
    assert result.output.startswith('Invalid include pattern "*.{ts": ')


async def test_grep_empty_pattern_is_required(run: Runner) -> None:
    result = await run("grep", {"pattern": ""})

    assert result.is_error
    assert result.output == "pattern is required"


async def test_grep_missing_path(run: Runner) -> None:
    result = await run("grep", {"pattern": "x", "path": "missing/dir"})

    assert result.is_error
    assert result.output == "Search path not found: missing/dir"
    assert result.metadata["error"] == "not_found"


async def test_grep_stops_at_100_and_says_more_matches_are_available(
    run: Runner, worktree: Path
) -> None:
    # As OpenCode 1.18.33: rg is stopped after the 101st match; no total is counted.
    busy = make(worktree / "busy.txt", "".join(f"hit {i}\n" for i in range(1, 151)), age=1)

    result = await run("grep", {"pattern": "hit"})

    lines = result.output.split("\n")
    assert lines[0] == "Found 100 matches (more matches available)"
    assert lines[1] == f"{busy}:"
    assert lines[2:102] == [f"  Line {i}: hit {i}" for i in range(1, 101)]
    assert lines[102:] == [
        "",
        "(Results truncated. Consider using a more specific path or pattern.)",
    ]
    assert result.metadata == {"matches": 100, "truncated": True}


async def test_grep_with_exactly_100_matches_is_not_truncated(run: Runner, worktree: Path) -> None:
    make(worktree / "hundred.txt", "hit\n" * 100)

    result = await run("grep", {"pattern": "hit"})

    assert result.output.startswith("Found 100 matches\n")
    assert "truncated" not in result.output.split("\n")[-1]
    assert result.metadata == {"matches": 100, "truncated": False}


async def test_grep_orders_the_files_shown_newest_first(run: Runner, worktree: Path) -> None:
    # 300 files of 10 matches: rg is stopped after the first 101; the files among them
    # are shown newest first.
    for i in range(300):
        make(worktree / "d" / f"f{i:03d}.txt", "m\n" * 10, age=(i * 7919) % 300)

    result = await run("grep", {"pattern": "m"})

    headers = [line[:-1] for line in result.output.split("\n") if line.endswith(".txt:")]
    ages = [int(os.stat(header).st_mtime) for header in headers]
    assert ages == sorted(ages, reverse=True)
    assert len(headers) == 10  # 100 matches, ten per file
    assert result.metadata == {"matches": 100, "truncated": True}


async def test_grep_cuts_long_lines(run: Runner, worktree: Path) -> None:
    make(worktree / "min.js", "needle" + "x" * 3000 + "\n")
    make(worktree / "wide.txt", "needle" + "é" * 3000 + "\n")

    result = await run("grep", {"pattern": "needle"})

    texts = [line.split(": ", 1)[1] for line in result.output.split("\n") if "Line 1" in line]
    assert sorted(texts) == sorted(
        [("needle" + "x" * 3000)[:2000] + "...", ("needle" + "é" * 3000)[:2000] + "..."]
    )


async def test_grep_keeps_pipes_in_text_and_file_names(run: Runner, worktree: Path) -> None:
    piped = make(worktree / "a|b.txt", "cmd | grep x || y\n")

    result = await run("grep", {"pattern": r"grep x \|\|"})

    assert result.output == f"Found 1 matches\n{piped}:\n  Line 1: cmd | grep x || y"


async def test_grep_crlf_lines_have_no_carriage_return(run: Runner, worktree: Path) -> None:
    crlf = make(worktree / "win.txt", b"first\r\nneedle one\r\nneedle two\r\n")

    result = await run("grep", {"pattern": "needle"})

    assert result.output == f"Found 2 matches\n{crlf}:\n  Line 2: needle one\n  Line 3: needle two"


async def test_grep_a_single_file(run: Runner, worktree: Path) -> None:
    target = make(worktree / "src" / "one.py", "needle\n")
    make(worktree / "src" / "two.py", "needle\n")

    result = await run("grep", {"pattern": "needle", "path": "src/one.py"})

    assert result.output == f"Found 1 matches\n{target}:\n  Line 1: needle"


async def test_grep_searches_hidden_files_but_not_dot_git(run: Runner, worktree: Path) -> None:
    hidden = make(worktree / ".github" / "ci.yml", "needle\n")
    make(worktree / ".git" / "config", "needle\n")

    for include in (None, "*", "config"):
        result = await run("grep", {"pattern": "needle", "include": include})
        assert ".git/" not in result.output, include
    result = await run("grep", {"pattern": "needle"})
    assert result.output == f"Found 1 matches\n{hidden}:\n  Line 1: needle"


async def test_grep_skips_binary_files(run: Runner, worktree: Path) -> None:
    binary = make(worktree / "blob.bin", b"needle\x00\x01\x02")

    in_tree = await run("grep", {"pattern": "needle"})
    direct = await run("grep", {"pattern": "needle", "path": str(binary)})

    assert in_tree.output == "No files found"
    assert direct.output == "No files found"


async def test_grep_asks_grep_permission(worktree: Path, editor: RecordingEditor) -> None:
    config = config_from_opencode({"permission": {"grep": "ask"}})
    host = ToolHost(worktree, config=config, tools=[grep.tool])

    await host.execute("grep", {"pattern": "x", "include": "*.py"}, editor=editor)

    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always) == ("grep", ["x"], ["*"])
    assert ask.metadata == {"pattern": "x", "path": None, "include": "*.py"}


def test_grep_render_notes_skipped_paths() -> None:
    # rg exits 2 when some paths could not be read; the matches it did find are kept.
    matches = grep.Matches()
    matches.add(b"/p/a.txt\x003|found it")
    matches.add(b'/p/a.txt: binary file matches (found "\\0" byte around offset 2)')

    text = grep.render(matches, partial=True)

    assert text == (
        "Found 1 matches\n/p/a.txt:\n  Line 3: found it\n"
        "\n(Some paths were inaccessible and skipped)"
    )


# --- list -------------------------------------------------------------------------------


async def test_list_renders_a_tree(run: Runner, worktree: Path) -> None:
    for rel in ("README.md", "setup.py", "src/app.py", "src/util/io.py", "src/util/a.py"):
        make(worktree / rel)
    make(worktree / "docs" / "x.md")

    result = await run("list", {})

    assert result.output == (
        f"{worktree}/\n"
        "  docs/\n"
        "    x.md\n"
        "  src/\n"
        "    util/\n"
        "      a.py\n"
        "      io.py\n"
        "    app.py\n"
        "  README.md\n"
        "  setup.py\n"
    )
    assert result.title == "."
    assert result.metadata == {"count": 6, "truncated": False}


async def test_list_hides_default_ignores_and_user_ignores(run: Runner, worktree: Path) -> None:
    for rel in (
        "node_modules/lib/index.js",
        "packages/app/node_modules/dep.js",
        "pkg/__pycache__/m.cpython-311.pyc",
        ".git/HEAD",
        ".venv/bin/python",
        ".coverage",
        ".coverage.host.123",
        "debug.log",
        "fixtures/big.json",
        "packages/app/index.js",
        ".env",
    ):
        make(worktree / rel)

    result = await run("list", {"ignore": ["*.log", "fixtures/"]})

    assert result.output == (f"{worktree}/\n  packages/\n    app/\n      index.js\n  .env\n")
    assert result.metadata == {"count": 2, "truncated": False}


async def test_list_a_sub_directory(run: Runner, worktree: Path) -> None:
    make(worktree / "src" / "lib" / "a.rs")
    make(worktree / "top.rs")

    result = await run("list", {"path": "src"})

    assert result.output == f"{worktree / 'src'}/\n  lib/\n    a.rs\n"
    assert result.title == "src"


async def test_list_stops_at_100_files(run: Runner, worktree: Path) -> None:
    for i in range(120):
        make(worktree / f"d{i % 3}" / f"f{i:03d}.txt")

    result = await run("list", {})

    files = [line for line in result.output.split("\n") if line.endswith(".txt")]
    assert len(files) == 100
    assert result.metadata == {"count": 100, "truncated": True}


async def test_list_empty_directory(run: Runner, worktree: Path) -> None:
    result = await run("list", {})

    assert result.output == f"{worktree}/\n"
    assert result.metadata == {"count": 0, "truncated": False}


async def test_list_missing_or_file_path(run: Runner, worktree: Path) -> None:
    file = make(worktree / "a.txt")

    missing = await run("list", {"path": "nope"})
    not_dir = await run("list", {"path": str(file)})

    assert missing.is_error and missing.metadata["error"] == "not_found"
    assert missing.output == f"Directory not found: {worktree / 'nope'}"
    assert not_dir.is_error
    assert not_dir.output.startswith(f"list path must be a directory: {file}")


async def test_list_asks_list_permission(worktree: Path, editor: RecordingEditor) -> None:
    config = config_from_opencode({"permission": {"list": "ask"}})
    host = ToolHost(worktree, config=config, tools=[list_tool.tool])

    await host.execute("list", {}, editor=editor)

    (ask,) = editor.asks
    assert (ask.permission, ask.patterns, ask.always) == ("list", [str(worktree)], ["*"])
    assert ask.metadata == {"path": str(worktree)}


# --- all three --------------------------------------------------------------------------


@pytest.fixture
def no_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Nothing beside the interpreter and nothing on PATH: rg cannot be found."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setenv("PATH", str(empty))
    tools.fsio.rg._find.cache_clear()
    yield
    tools.fsio.rg._find.cache_clear()  # before monkeypatch restores the real values


@pytest.mark.parametrize(
    ("tool", "args"),
    [("glob", {"pattern": "*"}), ("grep", {"pattern": "x"}), ("list", {})],
)
@pytest.mark.usefixtures("no_rg")
async def test_missing_rg_gives_the_install_hint(run: Runner, tool: str, args: dict) -> None:
    result = await run(tool, args)

    assert result.is_error
    assert result.output == tools.fsio.rg.INSTALL_HINT
    assert result.metadata["error"] == "failed"


def test_search_tools_declare_read_only_kinds() -> None:
    assert (glob.tool.kind, grep.tool.kind, list_tool.tool.kind) == ("search", "search", "read")
    for tool in (glob.tool, grep.tool, list_tool.tool):
        assert tool.annotations.read_only and tool.annotations.idempotent
        assert not tool.annotations.destructive


@needs_proc
async def test_cancelling_grep_kills_rg(run: Runner, worktree: Path) -> None:
    # rg blocks opening a FIFO nobody writes to: a search that never ends by itself.
    fifo = worktree / "stream"
    os.mkfifo(fifo)
    call = asyncio.create_task(run("grep", {"pattern": "x", "path": str(fifo)}))
    for _ in range(500):
        if rg_children():
            break
        await asyncio.sleep(0.01)
    assert rg_children() == ["S"], "rg did not start"
    await asyncio.sleep(0.1)  # usually past the spawn; a cancelled spawn kills rg too

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, timeout=10)  # a TimeoutError here means rg was not killed

    assert rg_children() == []  # killed and reaped: no process, no zombie


@needs_proc
async def test_runner_kills_rg_when_cancelled_while_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    reading = asyncio.Event()
    runner: list[Ripgrep] = []

    async def consume() -> None:
        async with Ripgrep(["--regexp", "x", "--", str(fifo)]) as rg:
            runner.append(rg)
            reading.set()
            async for _ in rg:
                pass

    task = asyncio.create_task(consume())
    await reading.wait()
    await asyncio.sleep(0)  # let it block on rg's output
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)

    assert runner[0].returncode == -signal.SIGKILL
    assert rg_children() == []


@needs_proc
async def test_runner_stops_rg_early_and_reaps_it(tmp_path: Path) -> None:
    # Far more output than a pipe holds, so rg is still running when we stop reading.
    for i in range(4000):
        make(tmp_path / "tree" / f"{'n' * 60}{i:05d}.txt")

    async with Ripgrep(["--files"], cwd=tmp_path / "tree") as rg:
        async for records in rg:
            assert records[0].endswith(b".txt")
            break

    assert rg.exit is None  # stopped by us, so rg's status means nothing
    await rg.reaped()  # killed at once; reaped in the background
    assert rg.returncode == -signal.SIGKILL
    assert rg_children() == []


async def test_runner_reports_rg_exit_and_stderr(tmp_path: Path) -> None:
    async with Ripgrep(["--regexp", "(", str(tmp_path)]) as rg:
        records = [record async for batch in rg for record in batch]

    assert records == []
    assert rg.exit is not None and rg.exit.code == 2
    assert "regex parse error" in rg.exit.stderr


async def test_runner_joins_records_split_across_reads(tmp_path: Path) -> None:
    long_line = "needle " + "y" * 200_000
    make(tmp_path / "big.txt", f"{long_line}\nneedle short\n")

    async with Ripgrep(["--no-filename", "--regexp", "needle", str(tmp_path / "big.txt")]) as rg:
        records = [record async for batch in rg for record in batch]

    assert records == [long_line.encode(), b"needle short"]
    assert rg.exit is not None and rg.exit.code == 0
