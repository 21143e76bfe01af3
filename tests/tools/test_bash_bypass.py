"""Denied commands cannot run by any route (issue 4, "Bash rules that cannot be sidestepped").

The corpus: every attempt below would delete ``marker`` (or run sudo) if it ran.
Each runs through the real bash tool under ``denied_commands: [rm, sudo]``, from
tools.yaml and from OpenCode's permission map, with an editor that rejects every
ask; each must fail (``deny``: permission_denied; ``ask``: an ask, so rejected) and
leave the marker in place. Positive controls prove the rules do not refuse
everything.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RecordingEditor
from tools.bash.decision import decide, unrestricted
from tools.bash.shell_parse import analyse
from tools.bash.walker import analyse_line
from tools.builtin import bash as bash_module
from tools.builtin.lazy import builtin_tools
from tools.config.effective import Config, SandboxSettings
from tools.config.merge import merge
from tools.config.opencode import config_from_opencode
from tools.config.yaml import compose, read_registry
from tools.host import ToolHost
from tools.permission.rules import Rule, rules_from_config
from tools.result import ToolResult

TOOLS_YAML = """\
tools:
  - name: bash
    permissions:
      allowed_commands: [ls, echo, cat, grep, git, "true", "false", find, xargs, env, timeout]
      denied_commands: [rm, sudo]
"""

OPENCODE = {"permission": {"bash": {"*": "allow", "rm *": "deny", "sudo *": "deny"}}}


def yaml_config() -> Config:
    layer, errors = read_registry(compose(TOOLS_YAML).value)
    assert errors == []
    return merge([layer])


def opencode_config() -> Config:
    return config_from_opencode(OPENCODE)


CONFIGS: dict[str, Callable[[], Config]] = {"tools.yaml": yaml_config, "opencode": opencode_config}


def make_host(worktree: Path, config: Config) -> ToolHost:
    return ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=config)


async def bash(host: ToolHost, editor: RecordingEditor, command: str) -> ToolResult:
    return await host.execute(
        "bash",
        {"command": command, "description": "Attempts a command", "timeout": 5000},
        editor=editor,
        session_id="ses_bypass",
    )


def script(worktree: Path) -> None:
    (worktree / "script.sh").write_text("rm marker\n")


def rm_link(worktree: Path) -> None:
    (worktree / "myrm").symlink_to("/bin/rm")
    (worktree / "rm").symlink_to("/bin/rm")


def arg_file(worktree: Path) -> None:
    (worktree / "list").write_text("marker\n")


def git_repo(worktree: Path) -> None:
    if shutil.which("git"):  # the denial needs no repository; the live run does
        subprocess.run(["git", "init", "-q", str(worktree)], check=True)


@dataclass(frozen=True)
class Attempt:
    command: str
    expect: str  # "deny": a rule names what runs; "ask": only known at run time
    setup: Callable[[Path], None] | None = None
    # Deletes the marker when nothing stops it (see test_each_live_attempt_is_a_real_route);
    # False: a program that is not installed here, or a route that fails on its own.
    live: bool = True


D, A = "deny", "ask"

CORPUS: list[Attempt] = [
    # spelling: quotes, escapes, paths, assignments, whitespace
    Attempt("rm marker", D),
    Attempt("\\rm marker", D),
    Attempt("'rm' marker", D),
    Attempt('"rm" marker', D),
    Attempt("r''m marker", D),
    Attempt('"r"m marker', D),
    Attempt("r\\m marker", D),
    Attempt("/bin/rm marker", D),
    Attempt("'/usr/bin/rm' marker", D),
    Attempt("./rm marker", D, rm_link),
    Attempt("./myrm marker", D, rm_link),
    Attempt("FOO=1 rm marker", D),
    Attempt("FOO=1 BAR='x y' /bin/rm marker", D),
    Attempt("r\\\nm marker", D),
    Attempt("rm\tmarker", D),
    Attempt("rm \\\n marker", D),
    # lists, pipelines, groups, control flow
    Attempt("(rm marker)", D),
    Attempt("{ rm marker; }", D),
    Attempt("true && rm marker", D),
    Attempt("false || rm marker", D),
    Attempt("true; rm marker", D),
    Attempt("echo hi | rm marker", D),
    Attempt("ls\nrm marker", D),
    Attempt("rm marker &", D),
    Attempt("! rm marker", D),
    Attempt("if true; then rm marker; fi", D),
    Attempt('for f in marker; do rm "$f"; done', D),
    Attempt("f() { rm marker; }; f", D),
    Attempt("case x in x) rm marker;; esac", D),
    # substitutions anywhere
    Attempt("echo $(rm marker)", D),
    Attempt('echo "$(rm marker)"', D),
    Attempt("echo `rm marker`", D),
    Attempt("cat <(rm marker)", D),
    Attempt("echo x > >(rm marker)", D),
    Attempt("x=$(rm marker)", D),
    Attempt("[[ -n $(rm marker) ]]", D),
    Attempt("cat <<EOF\n$(rm marker)\nEOF", D),
    Attempt("echo ${x:-$(rm marker)}", D),
    # wrappers
    Attempt("sudo rm marker", D, live=False),
    Attempt("sudo -u root rm marker", D, live=False),
    Attempt("sudo -n -- ls", D, live=False),
    Attempt("/usr/bin/sudo ls", D, live=False),
    Attempt("env rm marker", D),
    Attempt("env -i PATH=/bin rm marker", D),
    Attempt("env -u HOME -- rm marker", D),
    Attempt("env -S 'rm marker'", D),
    Attempt("env -S'-i rm marker'", D),
    Attempt("env sudo ls", D, live=False),
    Attempt("command rm marker", D),
    Attempt("command -p rm marker", D),
    Attempt("builtin rm marker", D, live=False),  # not a builtin; still never run
    Attempt("exec rm marker", D),
    Attempt("exec -a name rm marker", D),
    Attempt("nohup rm marker", D),
    Attempt("nice rm marker", D),
    Attempt("nice -n 5 rm marker", D),
    Attempt("nice -5 /bin/rm marker", D),
    Attempt("ionice -c 3 rm marker", D),
    Attempt("timeout 5 rm marker", D),
    Attempt("timeout -s KILL -k 1 5s rm marker", D),
    Attempt("stdbuf -o0 rm marker", D),
    Attempt("time rm marker", D),
    Attempt("time -p rm marker", D),
    Attempt("watch -n1 rm marker", D),
    Attempt("watch -x rm marker", D),
    Attempt("setsid rm marker", D),
    Attempt("busybox rm marker", D, live=False),
    Attempt("coproc rm marker", D),
    Attempt("doas rm marker", D, live=False),
    Attempt("flock .lock rm marker", D),
    Attempt("flock .lock -c 'rm marker'", D),
    Attempt("taskset -c 0 rm marker", D),
    Attempt("fakeroot rm marker", D),
    Attempt("sudo env nice timeout 5 rm marker", D, live=False),
    Attempt("env FOO=1 nice -n 2 timeout 5 stdbuf -oL rm marker", D),
    Attempt("T=5; timeout $T rm marker", D),
    # xargs and find
    Attempt("xargs rm <<< marker", D),
    Attempt("echo marker | xargs rm", D),
    Attempt("echo marker | xargs -I{} rm {}", D),
    Attempt("printf marker | xargs -0 -n1 -- rm", D),
    Attempt("echo marker | xargs timeout 5 rm", D),
    Attempt("xargs -a list rm", D, arg_file),
    Attempt("echo marker | xargs sh -c 'rm \"$0\"'", D),
    Attempt("find . -name marker -exec rm {} \\;", D),
    Attempt("find . -name marker -execdir rm {} +", D),
    Attempt("yes | find . -name marker -ok rm {} \\;", D),
    Attempt("find . -name marker -exec sh -c 'rm marker' \\;", D),
    # shells given a string, nested
    Attempt('bash -c "rm marker"', D),
    Attempt("sh -c 'cd . && rm marker'", D),
    Attempt("bash -lc 'rm marker'", D),
    Attempt("/bin/bash -ec 'rm marker'", D),
    Attempt("bash -o pipefail -c 'rm marker'", D),
    Attempt("zsh -c 'rm marker'", D, live=False),
    Attempt("dash -c 'rm marker'", D),
    Attempt("sh -c 'rm \"$1\"' _ marker", D),
    Attempt("bash -c \"bash -c 'rm marker'\"", D),
    Attempt('bash -c "sh -c \\"env rm marker\\""', D),
    Attempt("sudo sh -c 'rm marker'", D, live=False),
    Attempt("nohup sh -c 'rm marker' &", D),
    Attempt("su -c 'rm marker'", D),
    # code in other places
    Attempt("eval rm marker", D),
    Attempt("eval 'rm marker'", D),
    Attempt("trap 'rm marker' EXIT", D),
    Attempt("shopt -s expand_aliases\nalias x='rm'\nx marker", D),
    Attempt("hash -p /bin/rm ls; ls marker", D),
    Attempt("GIT_EDITOR='rm marker' git commit -q --allow-empty", D, git_repo),
    Attempt("env 'BASH_FUNC_ls%%=() { rm marker; }' bash -c ls", D),
    Attempt("mapfile -C 'rm marker' -c 1 <<< x", D),
    # a line tree-sitter cannot parse still cannot hide a denied command
    Attempt('rm marker\necho "oops', D),
    Attempt("true && rm marker\necho $(", D),
    Attempt("bash -c 'rm marker'\necho \"$(", D),
    Attempt("if then rm marker fi", A, live=False),
    Attempt("echo ${ rm marker; }", A, live=False),  # bash 5.3 runs ${ cmd; }
    # programs only known when the line runs
    Attempt("$(echo rm) marker", A),
    Attempt("`echo rm` marker", A),
    Attempt("cmd=rm; $cmd marker", A),
    Attempt("cmd=rm\n${cmd} marker", A),
    Attempt("${cmd:-rm} marker", A),
    Attempt("rm$IFS marker", A),
    Attempt("$'rm' marker", A),
    Attempt("$'\\x72m' marker", A),
    Attempt("/bin/[r]m marker", A),  # globs name only rm, whatever else /bin holds
    Attempt("/bin/r[m] marker", A),
    Attempt("r{m,} marker", A),
    Attempt("{rm,marker}", A),
    Attempt('eval "$(echo rm marker)"', A),
    Attempt('bash -c "$(echo rm marker)"', A),
    Attempt("echo rm marker | sh", A),
    Attempt("echo rm marker | bash -s", A),
    Attempt("sh <<EOF\nrm marker\nEOF", A),
    Attempt("source <(echo rm marker)", A),
    Attempt(". ./script.sh", A, script),
    Attempt("sh script.sh", A, script),
    Attempt("bash < script.sh", A, script),
    Attempt("BASH_ENV=./script.sh bash -c true", A, script),
    Attempt("echo rm marker | xargs env", A),
    Attempt("echo rm | xargs -I{} {} marker", A, live=False),  # GNU xargs: not in the name
    Attempt("echo marker | xargs -I{} sh -c 'rm {}'", D),  # its words are guessed at
    Attempt("find . -name rm -exec {} marker \\;", A, rm_link),
    # code that bash runs from arithmetic and subscripts (a value is an expression)
    Attempt("[[ 'a[$(rm marker)]' -eq 0 ]]", A),
    Attempt("x='a[$(rm marker)]'; (( x ))", A),
    Attempt("x='a[$(rm marker)]'; echo $(( x ))", A),
    Attempt("x='a[$(rm marker)]'; echo $[x]", A),
    Attempt("x='a[$(rm marker)]'; ((x++))", A),
    Attempt("x='a[$(rm marker)]'; while ((x)); do break; done", A),
    Attempt("x='a[$(rm marker)]'; for ((i=x; i<0; i++)); do :; done", A),
    Attempt("x='a[$(rm marker)]'; [[ $x -eq 0 ]]", A),
    Attempt("x='a[$(rm marker)]'; [[ $x -lt 1 ]]", A),
    Attempt("x='a[$(rm marker)]'; [[ 1 -eq x ]]", A),
    Attempt("x='a[$(rm marker)]'; let x", A),
    Attempt("x='a[$(rm marker)]'; echo ${arr[x]}", A),
    Attempt("x='a[$(rm marker)]'; arr[x]=1", A),
    Attempt("readonly -a z; x='a[$(rm marker)]'; echo ${z[x]}", A),
    Attempt("x='a[$(rm marker)]'; s=abc; echo ${s:x}", A),
    Attempt("x='a[$(rm marker)]'; s=abc; echo ${s:0:x}", A),
    Attempt("x='a[$(rm marker)]'; a=(1); echo ${a[@]:x}", A),
    Attempt("x='a[$(rm marker)]'; [[ -v $x ]]", A),
    Attempt("x='a[$(rm marker)]'; test -v \"$x\"", A),
    Attempt("x='a[$(rm marker)]'; [ -v \"$x\" ]", A),
    Attempt("x='a[$(rm marker)]'; printf -v \"$x\" %s 1", A),
    Attempt("x='a[$(rm marker)]'; read \"$x\" <<< 1", A),
    # declarations that make later assignments arithmetic, or names references
    Attempt("x='a[$(rm marker)]'; declare -i y; y=x", A),
    Attempt("declare -i y='a[$(rm marker)]'", A),
    Attempt("typeset -i y; y='a[$(rm marker)]'", A),
    Attempt("f() { local -i y='a[$(rm marker)]'; }; f", A),
    Attempt("x='a[$(rm marker)]'; export y; declare -i y=x", A),
    Attempt("declare -n r='a[$(rm marker)]'; echo $r", A),
    # parameter transformations
    Attempt("x='$(rm marker)'; echo \"${x@P}\"", A),
    Attempt("x='a[$(rm marker)]'; echo ${!x}", A),
    # variables that rebind what a name runs, or what runs first
    Attempt("BASH_CMDS[ls]=/bin/rm; ls marker", A),
    Attempt("shopt -s expand_aliases\nBASH_ALIASES[x]=rm\nx marker", A),
    Attempt("printf 'rm marker' > ls; chmod +x ls; PATH=.:$PATH ls", A),
    Attempt("printf 'rm marker' > ls; chmod +x ls; export PATH=\".:$PATH\"; ls", A),
    Attempt("printf 'rm marker' > ls; chmod +x ls; for PATH in \".:$PATH\"; do ls; done", A),
    Attempt("printf 'rm marker' > ls; chmod +x ls; read PATH <<< \".:$PATH\"; ls", A),
    Attempt("printf 'rm marker' > ls; chmod +x ls; declare PATH=\".:$PATH\"; ls", A),
    Attempt("env ENV=./script.sh sh -ic true", A, script),
    Attempt("ENV=./script.sh dash -i -c true", A, script),
    Attempt("PROMPT_COMMAND='rm marker' bash -i", D),
    # eval, source and traps with strings built at run time
    Attempt("eval \"$(printf 'r%s marker' m)\"", A),
    Attempt("trap \"$(printf 'r%s marker' m)\" EXIT", A),
    Attempt("trap 'eval \"$C\"' EXIT; C='rm marker'", A),
    Attempt("c='rm marker'; trap \"$c\" EXIT", A),
    # here-documents and here-strings into shells
    Attempt("bash <<'X'\nrm marker\nX", A),
    Attempt("sh <<< 'rm marker'", A),
    Attempt("cat <<X | sh\nrm marker\nX", A),
    Attempt("bash -s <<< 'rm marker'", A),
    # process substitution, coprocesses, functions and aliases defined inline
    Attempt("diff <(rm marker) /dev/null", D),
    Attempt("tee >(rm marker) < /dev/null", D),
    Attempt("coproc x { rm marker; }; wait", D),
    Attempt("coproc bash -c 'rm marker'; wait", D),
    Attempt("function g { rm marker; }; g", D),
    Attempt('f() { "$@"; }; f rm marker', A),
    Attempt("shopt -s expand_aliases\nalias ls='rm marker'\nls", D),
    # wrappers that run a program (issue 11's list)
    Attempt("setarch x86_64 rm marker", D),
    Attempt("setarch x86_64 -R rm marker", D),
    Attempt("linux64 rm marker", D),
    Attempt("linux32 rm marker", D),
    Attempt("nice -n 1 setarch x86_64 rm marker", D),
    Attempt("prlimit --nofile=100 rm marker", D),
    Attempt("prlimit -n100 rm marker", D),
    Attempt("setpriv --reset-env rm marker", D),
    Attempt("setpriv rm marker", D),
    Attempt("unshare -r rm marker", D, live=False),  # not in a sandbox's namespace
    Attempt("unshare --user --map-root-user rm marker", D, live=False),
    Attempt("choom -n 0 rm marker", D),
    Attempt("script -qc 'rm marker' /dev/null", D),
    Attempt("script -q -c 'rm marker' /dev/null", D),
    Attempt("dbus-run-session rm marker", D),
    Attempt("strace -f -o /dev/null rm marker", D),
    Attempt("strace -qq rm marker", D),
    Attempt("gdb -batch -ex 'shell rm marker'", A),
    Attempt("chrt -o 0 rm marker", D),
    Attempt("chrt --other 0 rm marker", D),
    Attempt("sg root -c 'rm marker'", D),
    Attempt("sg root 'rm marker'", D),
    Attempt("runuser -u root rm marker", D),
    Attempt("runuser -u root -- rm marker", D),
    Attempt("setsid -f rm marker", D),
    Attempt("env -i /bin/rm marker", D),
    Attempt("env -i setsid -f rm marker", D),
    Attempt("command -- rm marker", D),
    Attempt("exec -c rm marker", D),
    Attempt("timeout --foreground 5 rm marker", D),
    Attempt("systemd-run --user rm marker", D, live=False),  # no systemd here
]


def test_the_corpus_is_large_and_has_no_duplicates() -> None:
    commands = [a.command for a in CORPUS]
    assert len(set(commands)) == len(commands)
    assert len(commands) + len(ESCAPES) >= 200


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("attempt", CORPUS, ids=[repr(a.command) for a in CORPUS])
async def test_a_denied_command_cannot_run_by_any_route(
    worktree: Path, attempt: Attempt, config: str
) -> None:
    marker = worktree / "marker"
    marker.write_text("keep me\n")
    if attempt.setup:
        attempt.setup(worktree)
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, CONFIGS[config]()), editor, attempt.command)
    assert result.is_error, result.output
    expected = "permission_denied" if attempt.expect == D else "permission_rejected"
    assert result.metadata["error"] == expected, result.output
    if attempt.expect == D:
        assert editor.asks == []  # denied before anyone is asked
    assert marker.read_text() == "keep me\n"


LIVE = [a for a in CORPUS if a.live]
# Not in every base system: a live attempt that needs one is skipped where it is missing.
OPTIONAL_PROGRAMS = ("dash", "watch", "ionice", "setsid", "taskset", "fakeroot", "flock", "git")


@pytest.mark.parametrize("attempt", LIVE, ids=[repr(a.command) for a in LIVE])
async def test_each_live_attempt_is_a_real_route(worktree: Path, attempt: Attempt) -> None:
    """Without rules (the defaults allow everything) the attempt deletes the marker:
    the corpus tests routes that work, not commands that would fail anyway."""
    missing = [p for p in OPTIONAL_PROGRAMS if p in attempt.command and not shutil.which(p)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    marker = worktree / "marker"
    marker.write_text("keep me\n")
    if attempt.setup:
        attempt.setup(worktree)
    no_defence = Config(sandbox=SandboxSettings(mode="off"))  # and the default rules
    host = ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=no_defence)
    result = await host.execute(
        "bash",
        {"command": attempt.command, "description": "Attempts a command", "timeout": 1500},
        editor=RecordingEditor(reply="once"),
    )
    for _ in range(40):  # background jobs (`&`, coproc) delete a moment later
        if not marker.exists():
            break
        await asyncio.sleep(0.05)
    assert not marker.exists(), result.output


CONTROLS = [
    ("ls", "marker\n"),
    ("echo hi", "hi\n"),
    ("cat marker", "keep me\n"),
    ("echo rm marker", "rm marker\n"),
    ("grep -c keep marker", "1\n"),
    ("ls | grep mark", "marker\n"),
    ('echo "$(ls)"', "marker\n"),
    ("find . -name marker", "./marker\n"),
    ("echo marker | xargs echo", "marker\n"),
    ("env FOO=1 echo hi", "hi\n"),
    ("timeout 5 echo hi", "hi\n"),
    ("git --version >/dev/null && echo ok", "ok\n"),
    ("true && echo sudo rm", "sudo rm\n"),
]


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize(("command", "output"), CONTROLS, ids=[c for c, _ in CONTROLS])
async def test_allowed_commands_still_run_without_asking(
    worktree: Path, config: str, command: str, output: str
) -> None:
    (worktree / "marker").write_text("keep me\n")
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, CONFIGS[config]()), editor, command)
    assert not result.is_error, result.output
    assert editor.asks == []
    assert result.output == output


# ---------------------------------------------------------------- what the user sees


def host_with(worktree: Path, permission: dict[str, Any]) -> ToolHost:
    return make_host(worktree, Config(rules=rules_from_config({"bash": permission})))


async def test_the_denial_names_the_rule_and_what_it_caught(worktree: Path) -> None:
    (worktree / "marker").write_text("x")
    host = make_host(worktree, opencode_config())
    result = await bash(host, RecordingEditor(), "env FOO=1 /bin/rm -f marker")
    assert result.metadata["error"] == "permission_denied"
    assert result.metadata["rule"] == {"permission": "bash", "pattern": "rm *", "action": "deny"}
    assert result.metadata["command"] == "env FOO=1 /bin/rm -f marker"
    assert result.metadata["matched"] == "rm -f marker"
    assert result.output.startswith(
        "The user has specified a rule which prevents you from using this specific tool call: "
        "`env FOO=1 /bin/rm -f marker` runs `rm -f marker`, which the rule `rm *` denies. "
        "Nothing was run."
    )


async def test_sudo_denied_denies_everything_under_it(worktree: Path) -> None:
    result = await bash(make_host(worktree, yaml_config()), RecordingEditor(), "sudo -n ls")
    assert result.metadata["rule"]["pattern"] == "sudo *"


async def test_a_program_on_path_that_links_to_a_denied_one_is_denied(
    worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "del").symlink_to("/bin/rm")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (worktree / "marker").write_text("x")
    result = await bash(make_host(worktree, opencode_config()), RecordingEditor(), "del marker")
    assert result.metadata["error"] == "permission_denied"
    assert result.metadata["matched"] == "rm"
    assert (worktree / "marker").exists()


async def test_a_denial_comes_before_the_external_directory_ask(
    worktree: Path, tmp_path: Path
) -> None:
    editor = RecordingEditor()
    host = make_host(worktree, opencode_config())
    result = await bash(host, editor, f"cat {tmp_path} ; command rm -rf {tmp_path}")
    assert result.metadata["error"] == "permission_denied"
    assert editor.asks == []


async def test_an_unknown_command_asks_even_when_its_text_is_allowed(worktree: Path) -> None:
    editor = RecordingEditor(reply="once")
    result = await bash(make_host(worktree, opencode_config()), editor, "cmd=echo; $cmd hi")
    assert result.output == "hi\n"
    (ask,) = editor.asks
    assert ask.permission == "bash"
    assert ask.patterns == ["$cmd hi"]
    assert ask.always == []  # an unknown command can never be approved for good
    assert ask.metadata["unknown"] == ["the program `$cmd` is only known when it runs"]


async def test_always_on_an_unknown_command_approves_nothing(worktree: Path) -> None:
    editor = RecordingEditor(reply="always")
    host = make_host(worktree, opencode_config())
    await bash(host, editor, "cmd=echo; $cmd hi")
    await bash(host, editor, "cmd=echo; $cmd hi")
    assert len(editor.asks) == 2


async def test_a_rejected_unknown_command_carries_the_feedback(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject", message="write it out")
    result = await bash(make_host(worktree, opencode_config()), editor, "$(echo ls)")
    assert result.metadata["error"] == "permission_rejected"
    assert result.metadata["feedback"] == "write it out"


async def test_unknown_commands_are_denied_when_the_catch_all_denies(worktree: Path) -> None:
    editor = RecordingEditor()
    host = host_with(worktree, {"*": "deny", "echo *": "allow"})
    assert (await bash(host, editor, "echo ok")).output == "ok\n"
    result = await bash(host, editor, "cmd=echo; $cmd hi")
    assert result.metadata["error"] == "permission_denied"
    assert "only known when it runs" in result.output
    assert result.metadata["rule"]["pattern"] == "*"
    assert editor.asks == []


async def test_unknown_commands_run_under_the_default_rules(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject")
    host = ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool])
    result = await bash(host, editor, "cmd=echo; $cmd hi | sh")
    assert not result.is_error
    assert editor.asks == []


async def test_an_exact_allow_is_not_undone_by_the_bare_program_name(worktree: Path) -> None:
    host = host_with(worktree, {"*": "deny", "echo hi": "allow"})
    assert (await bash(host, RecordingEditor(), "echo hi")).output == "hi\n"
    result = await bash(host, RecordingEditor(), "/bin/echo hi")
    assert result.metadata["error"] == "permission_denied"


async def test_an_allowed_program_does_not_allow_the_wrapper_or_a_lookalike(
    worktree: Path,
) -> None:
    editor = RecordingEditor(reply="reject")
    host = host_with(worktree, {"*": "ask", "git *": "allow"})
    for command in ("sudo git status", "./git status", "env GIT_DIR=x git status"):
        result = await bash(host, editor, command)
        assert result.metadata["error"] == "permission_rejected", command
    assert [a.patterns[0] for a in editor.asks] == [
        "sudo git status",
        "./git status",
        "env GIT_DIR=x git status",
    ]


async def test_an_allowed_wrapper_does_not_allow_what_it_runs(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject")
    host = host_with(worktree, {"*": "ask", "env *": "allow"})
    await bash(host, editor, "env touch made")
    (ask,) = editor.asks
    assert ask.patterns == ["env touch made", "touch made"]
    assert ask.always == ["env *", "touch *"]
    assert not (worktree / "made").exists()


async def test_always_approves_every_stage_of_a_wrapper_chain(worktree: Path) -> None:
    editor = RecordingEditor(reply="always")
    host = host_with(worktree, {"*": "ask"})
    await bash(host, editor, "env FOO=1 echo one")
    assert editor.asks[0].always == ["env *", "echo *"]
    assert (await bash(host, editor, "env FOO=2 echo two")).output == "two\n"
    assert len(editor.asks) == 1


async def test_nested_shell_commands_are_listed_in_the_ask(worktree: Path) -> None:
    editor = RecordingEditor(reply="reject")
    await bash(host_with(worktree, {"*": "ask"}), editor, "bash -c 'ls && touch x'")
    assert editor.asks[0].patterns == ["bash -c 'ls && touch x'", "ls", "touch x"]
    assert editor.asks[0].always == ["bash *", "ls *", "touch *"]


# ---------------------------------------------------------------- the analysis


def programs(line: str) -> list[list[str]]:
    return [[s.name for s in c.stages] for c in analyse_line(line).commands]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("sudo -u root env FOO=1 nice -n 5 rm -rf x", [["sudo", "env", "nice", "rm"]]),
        ("timeout -s KILL 5 stdbuf -o0 ls", [["timeout", "stdbuf", "ls"]]),
        ("command -v rm", [["command", "rm"]]),  # a lookup, still checked as rm
        ("xargs -I % -P 4 cp % dir", [["xargs", "cp"]]),
        ("find . -exec grep -l x {} + -delete", [["find"], ["grep"]]),
        ("bash -c 'ls | wc -l'", [["bash"], ["ls"], ["wc"]]),
        ("watch -n 2 'git status'", [["watch"], ["git"]]),
        ("env -S 'A=1 ls -l'", [["env", "ls"]]),
        ("exec 3>&1", [["exec"]]),
        ("ls $(which rm)", [["ls"], ["which"]]),
    ],
)
def test_effective_programs(line: str, expected: list[list[str]]) -> None:
    assert programs(line) == expected


def test_a_shell_string_nested_too_deep_is_unknown() -> None:
    line = "rm x"
    for _ in range(9):
        line = f"sh -c {shlex_quote(line)}"
    analysis = analyse_line(line)
    assert any("nested more than 8 levels" in r for c in analysis.commands for r in c.unknown)
    assert not any(c.stages and c.stages[0].name == "rm" for c in analysis.commands)


def shlex_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_argv_joins_line_continuations_and_marks_expansions() -> None:
    (command,) = analyse("r\\\nm 'a b' *.txt {x,y} \"*\" $x").commands
    assert [a.value for a in command.argv] == ["rm", "a b", "*.txt", "{x,y}", "*", None]
    assert [a.expands for a in command.argv] == [False, False, True, True, False, False]
    assert command.tokens[:2] == ("r", "m")  # OpenCode's tokens are unchanged


def test_redirect_targets_and_assignments_are_collected() -> None:
    line = analyse('A=1 echo x > out 2>&1 <&3 >&- < "in put"; export PAGER=less')
    assert [a.value for a in line.redirects] == ["out", "in put"]
    assert [(n, a.value) for n, a in line.assignments] == [("A", "1"), ("PAGER", "less")]


def test_unrestricted_means_no_bash_rule_can_say_no() -> None:
    allow_all = [Rule("*", "*", "allow")]
    assert unrestricted(allow_all)
    assert unrestricted([Rule("bash", "rm *", "deny"), *allow_all])  # shadowed
    assert not unrestricted([*allow_all, Rule("bash", "rm *", "deny")])
    assert not unrestricted([*allow_all, Rule("bash", "git push *", "ask")])
    assert not unrestricted([Rule("edit", "*", "allow")])  # nothing matches bash: ask
    assert unrestricted([*allow_all, Rule("edit", "*", "deny")])


def test_decide_reports_the_first_denying_spelling() -> None:
    rules = rules_from_config({"bash": {"*": "allow", "rm *": "deny"}})
    decision = decide(analyse_line("nice -n 1 /bin/rm x", Path(os.getcwd())), rules)
    assert decision.denial is not None
    assert decision.denial.matched == "rm x"


# ---------------------------------------------------------------- writes outside the project
#
# Every line below writes {out}/marker (or makes {out}/repo), a directory beside the
# project that no config allows. Live with no defence, each does; under each config
# format it is refused by the parser (an external_directory or bash ask, rejected),
# or it runs and the kernel stops the write: either way the marker is intact.


@dataclass(frozen=True)
class Escape:
    command: str
    made: str = ""  # a path below {out} that the line creates when it works

    def format_command(self, out: Path) -> str:
        return self.command.format(out=out)


def a_repo(worktree: Path) -> None:
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(worktree / "src")], check=True)


HIDE = '"$(printf %s {out})"'  # the directory, spelled so that no parser can see it

ESCAPES: list[Escape] = [
    Escape("echo pwned > {out}/marker"),
    Escape("echo pwned >> {out}/marker"),
    Escape("f={out}/marker; echo pwned > $f"),
    Escape('f={out}; echo pwned > "$f/marker"'),
    Escape("d={out}; f=$d/marker; echo pwned > ${{f}}"),
    Escape("cd {out} && echo pwned > marker"),
    Escape("cd {out}; echo pwned > ./marker"),
    Escape("(cd {out}; echo pwned > marker)"),
    Escape("pushd {out} >/dev/null && echo pwned > marker"),
    Escape("cd {out} && cd - >/dev/null && cd - >/dev/null && echo pwned > marker"),
    Escape("CDPATH={out}/..; cd outside >/dev/null && echo pwned > marker"),
    Escape("HOME={out}; echo pwned > ~/marker"),
    Escape(f"cd {HIDE} && echo pwned > marker"),
    Escape(f"echo pwned > {HIDE}/marker"),
    Escape(f"echo pwned | tee {HIDE}/marker"),
    Escape("echo pwned | tee {out}/marker"),
    Escape("echo pwned | tee -a {out}/marker"),
    Escape("echo pwned | dd of={out}/marker status=none"),
    Escape(f"echo pwned | dd of={HIDE}/marker status=none"),
    Escape("truncate -s 0 {out}/marker"),
    Escape(f"truncate -s 0 {HIDE}/marker"),
    Escape("sed -i s/keep/pwned/ {out}/marker"),
    Escape(f"sed -i s/keep/pwned/ {HIDE}/marker"),
    Escape("ln -sf /etc/hostname {out}/marker"),
    Escape("echo pwned > x && cp x {out}/marker"),
    Escape("echo pwned > x && cp -t {out} x && mv {out}/x {out}/marker"),
    Escape("echo pwned > x && mv x {out}/marker"),
    Escape("echo pwned > x && install x {out}/marker"),
    Escape(f"echo pwned > x && cp x {HIDE}/marker"),
    Escape(f"cp /bin/cp ./c && echo pwned > x && ./c x {HIDE}/marker"),
    Escape(f"ln -s {HIDE}/marker link && echo pwned > link"),
    Escape(f"ln {HIDE}/marker hard && echo pwned > hard"),
    Escape("git -C {out} init -q repo", made="repo"),
    Escape("git init -q {out}/repo", made="repo"),
    Escape(f"git init -q {HIDE}/repo", made="repo"),
    Escape("git clone -q src {out}/repo", made="repo"),
    Escape("git --git-dir={out}/repo init -q", made="repo"),
    Escape("mkdir {out}/repo", made="repo"),
    Escape(f"mkdir {HIDE}/repo", made="repo"),
    Escape("touch {out}/repo", made="repo"),
    Escape(f"tar -cf {HIDE}/repo -T /dev/null", made="repo"),
    Escape("python3 -c \"open('{out}/marker', 'w').write('pwned')\""),
    Escape("python3 -c \"import os; os.remove('{out}/marker')\""),
    Escape("node -e \"require('fs').writeFileSync('{out}/marker', 'pwned')\""),
    Escape('perl -e \'open(F, ">{out}/marker"); print F "pwned"\''),
    Escape('awk \'BEGIN {{ print "pwned" > "{out}/marker" }}\''),
    Escape("awk 'BEGIN {{ system(\"echo pwned > {out}/marker\") }}'"),
    Escape("bash -c 'echo pwned > {out}/marker'"),
    Escape(f"bash -c 'echo pwned > {HIDE}/marker'"),
    Escape("echo pwned | xargs -I{{}} sh -c 'echo {{}} > {out}/marker'"),
    Escape("find {out} -name marker -exec sh -c 'echo pwned > {{}}' \\;"),
    Escape(f"env -i setsid -f sh -c 'echo pwned > {HIDE}/marker'; sleep 0.5"),
    Escape(f"(echo pwned > {HIDE}/marker &); sleep 0.5"),
    Escape(f"nohup sh -c 'echo pwned > {HIDE}/marker' >/dev/null 2>&1; sleep 0.3"),
    Escape("python3 - <<'X'\nopen('{out}/marker', 'w').write('pwned')\nX"),
    Escape(f'eval "echo pwned > {HIDE}/marker"'),
]
assert len({e.command for e in ESCAPES}) == len(ESCAPES)


def escape_paths(worktree: Path) -> tuple[Path, Path]:
    out = worktree.parent / "outside"
    out.mkdir(exist_ok=True)
    marker = out / "marker"
    marker.write_text("keep me\n")
    (worktree / "src").mkdir(exist_ok=True)
    a_repo(worktree)
    return out, marker


def escaped(out: Path, marker: Path, escape: Escape) -> bool:
    if escape.made:
        return (out / escape.made).exists()
    return not marker.exists() or marker.read_text() != "keep me\n"


@pytest.mark.parametrize("escape", ESCAPES, ids=[repr(e.command) for e in ESCAPES])
async def test_each_escape_writes_outside_when_nothing_stops_it(
    worktree: Path, escape: Escape
) -> None:
    out, marker = escape_paths(worktree)
    if any(p in escape.command for p in ("node", "perl", "git")) and not all(
        shutil.which(p) for p in ("node", "perl", "git") if p in escape.command
    ):
        pytest.skip("a program it needs is not installed")
    no_defence = Config(sandbox=SandboxSettings(mode="off"))
    host = ToolHost(worktree, tools=[*builtin_tools(), bash_module.tool], config=no_defence)
    result = await host.execute(
        "bash",
        {"command": escape.format_command(out), "description": "Escapes", "timeout": 5000},
        editor=RecordingEditor(reply="once"),
    )
    assert escaped(out, marker, escape), result.output


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("escape", ESCAPES, ids=[repr(e.command) for e in ESCAPES])
async def test_no_escape_writes_outside_under_either_config(
    worktree: Path, escape: Escape, config: str
) -> None:
    out, marker = escape_paths(worktree)
    editor = RecordingEditor(reply="reject")
    result = await bash(make_host(worktree, CONFIGS[config]()), editor, escape.format_command(out))
    await asyncio.sleep(0.05)
    assert not escaped(out, marker, escape), result.output
    if not result.is_error:  # it ran: then the kernel held its writes
        assert "fs-write" in result.metadata["sandbox"]["enforced"]
