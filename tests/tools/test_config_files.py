"""Config files: sources and precedence, JSONC, the YAML registry, and failing closed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import RecordingEditor
from tools.config import jsonc
from tools.config.errors import ConfigError
from tools.config.files import LoadedConfig, config_paths, load_config
from tools.config.opencode import config_from_opencode
from tools.host import ToolHost
from tools.permission.defaults import AGENT_RULES, default_rules
from tools.permission.rules import Rule, evaluate, rules_from_config
from tools.truncation import MAX_BYTES, output_dir

REGISTRY = """\
tools:
  - name: "bash"
    type: "builtin"          # builtin | custom
    enabled: true
    permissions:
      allowed_commands: ["npm", "git", "node"]
      denied_commands: ["rm", "sudo"]
      allowed_dirs: ["~/projects"]
  - name: "webfetch"
    type: "builtin"
    enabled: false
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def global_dir(home: Path) -> Path:
    path = home / ".config" / "opencode"
    path.mkdir(parents=True)
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def action(loaded: LoadedConfig, permission: str, pattern: str, agent: str = "build") -> str:
    """What the host would decide: built-in and agent rules, then the config's."""
    base = [*default_rules(output_dir()), *rules_from_config(AGENT_RULES.get(agent))]
    return evaluate(permission, pattern, loaded.config.effective_rules(base)).action


# -- sources and precedence ----------------------------------------------------------


def test_no_files_gives_the_defaults(worktree: Path, global_dir: Path) -> None:
    loaded = load_config(worktree)
    assert loaded.files == ()
    assert loaded.problems == ()
    assert loaded.config.rules == []
    assert loaded.config.is_enabled("bash")
    assert action(loaded, "edit", "a.py") == "allow"


def test_watch_lists_every_source_in_precedence_order(worktree: Path, global_dir: Path) -> None:
    assert config_paths(worktree) == [
        global_dir / "config.json",
        global_dir / "opencode.json",
        global_dir / "opencode.jsonc",
        global_dir / "tools.yaml",
        worktree / "opencode.jsonc",
        worktree / "opencode.json",
        worktree / ".opencode" / "opencode.jsonc",
        worktree / ".opencode" / "opencode.json",
        worktree / ".opencode" / "tools.yaml",
    ]
    assert list(load_config(worktree).watch) == config_paths(worktree)


def test_global_dir_under_home(worktree: Path, global_dir: Path) -> None:
    write(global_dir / "opencode.json", '{"tools": {"webfetch": false}}')
    loaded = load_config(worktree)
    assert loaded.files == (global_dir / "opencode.json",)
    assert not loaded.config.is_enabled("webfetch")


def test_global_dir_follows_xdg_config_home(
    worktree: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "xdg"
    write(xdg / "opencode" / "tools.yaml", REGISTRY)
    write(home / ".config" / "opencode" / "opencode.json", '{"tools": {"read": false}}')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    loaded = load_config(worktree)
    assert loaded.files == (xdg / "opencode" / "tools.yaml",)
    assert not loaded.config.is_enabled("webfetch")
    assert loaded.config.is_enabled("read")


def test_opencode_config_dir_wins_over_xdg(
    worktree: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = write(tmp_path / "explicit" / "opencode.jsonc", '{"tools": {"grep": false}}')
    write(tmp_path / "xdg" / "opencode" / "opencode.json", '{"tools": {"glob": false}}')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(explicit.parent))
    loaded = load_config(worktree)
    assert loaded.files == (explicit,)
    assert not loaded.config.is_enabled("grep")
    assert loaded.config.is_enabled("glob")


def test_project_wins_over_global(worktree: Path, global_dir: Path) -> None:
    write(
        global_dir / "opencode.json", '{"tools": {"bash": false}, "permission": {"edit": "deny"}}'
    )
    write(worktree / "opencode.json", '{"tools": {"bash": true}, "permission": {"edit": "ask"}}')
    loaded = load_config(worktree)
    assert loaded.config.is_enabled("bash")
    assert action(loaded, "edit", "a.py") == "ask"


def test_dot_opencode_wins_over_the_root_file(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.json", '{"permission": {"webfetch": "deny"}}')
    write(worktree / ".opencode" / "opencode.jsonc", '{"permission": {"webfetch": "ask"}}')
    loaded = load_config(worktree)
    assert loaded.files == (worktree / "opencode.json", worktree / ".opencode" / "opencode.jsonc")
    assert action(loaded, "webfetch", "https://x.test") == "ask"


def test_project_tools_yaml_is_read_last_of_the_files(worktree: Path, global_dir: Path) -> None:
    write(worktree / ".opencode" / "opencode.json", '{"tools": {"webfetch": true}}')
    write(worktree / ".opencode" / "tools.yaml", REGISTRY)
    assert not load_config(worktree).config.is_enabled("webfetch")


def test_initialization_options_win_over_project(worktree: Path, global_dir: Path) -> None:
    write(worktree / ".opencode" / "tools.yaml", REGISTRY)
    loaded = load_config(
        worktree,
        {"tools": {"webfetch": True}, "permission": {"bash": {"rm *": "allow"}}},
    )
    assert loaded.config.is_enabled("webfetch")
    assert action(loaded, "bash", "rm -rf build") == "allow"
    assert action(loaded, "bash", "sudo ls") == "deny"  # the file's other rules still apply


def test_later_sources_append_rules_rather_than_merge_keys(
    worktree: Path, global_dir: Path
) -> None:
    # A deep merge would keep "rm *" in the global position, before "*": allow.
    write(global_dir / "opencode.json", '{"permission": {"bash": {"rm *": "deny", "*": "allow"}}}')
    write(worktree / "opencode.json", '{"permission": {"bash": {"rm *": "ask"}}}')
    loaded = load_config(worktree)
    assert action(loaded, "bash", "rm x") == "ask"
    assert action(loaded, "bash", "ls") == "allow"


def test_a_dir_that_is_both_global_and_project_is_read_once(
    worktree: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml_file = write(worktree / ".opencode" / "tools.yaml", REGISTRY)
    monkeypatch.setenv("OPENCODE_CONFIG_DIR", str(worktree / ".opencode"))
    loaded = load_config(worktree)
    assert loaded.files == (yaml_file,)
    assert loaded.config.denied_commands == ("rm", "sudo")


def test_tools_map_accepts_wildcards(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.json", '{"tools": {"web*": false, "webfetch": true}}')
    config = load_config(worktree).config
    assert not config.is_enabled("websearch")
    assert config.is_enabled("webfetch")
    assert config.is_enabled("read")


def test_unknown_opencode_keys_are_ignored(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / "opencode.json",
        '{"$schema": "https://opencode.ai/config.json", "model": "x/y", "theme": 3, '
        '"agent": {"build": {"color": "accent", "options": {"x": 1}}}, "mcp": null}',
    )
    assert load_config(worktree).problems == ()


def test_agent_and_provider_shapes_are_checked(worktree: Path, global_dir: Path) -> None:
    """They decide what sub-agents may do and where they run: a wrong shape fails closed."""
    write(
        worktree / "opencode.json",
        '{"provider": {"a": []}, "agent": {"build": {"tools": 7}}}',
    )
    problems = {(p.key, p.message) for p in load_config(worktree).problems}
    assert problems == {
        ("provider.a", "expected an object, got []"),
        ("agent.build.tools", "expected an object of tool name to true/false, got 7"),
    }


def test_empty_files_are_no_settings(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.jsonc", "// nothing yet\n")
    write(worktree / ".opencode" / "tools.yaml", "# nothing yet\n")
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert len(loaded.files) == 2


# -- JSONC ---------------------------------------------------------------------------


def test_jsonc_comments_and_trailing_commas(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / "opencode.jsonc",
        """\
// line comment
{
  /* block
     comment */
  "permission": {
    "bash": {
      "curl http://example.test/*": "deny", // "//" inside a string is not a comment
      "echo /* not a comment */": "deny",
    },
  },
  "tool_output": {"max_lines": 10,},
}
""",
    )
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert action(loaded, "bash", "curl http://example.test/a") == "deny"
    assert action(loaded, "bash", "echo /* not a comment */") == "deny"
    assert loaded.config.tool_output.max_lines == 10


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "expected ',' or '}', found '\"'"),
        ('{\n  "tools": {,}\n}', 2, 13, "expected a quoted key or '}', found ','"),
        ('{\n  "a": tru\n}', 2, 8, "expected a value, found 't'"),
        ('{"a": 1}\n/* open', 2, 1, "unterminated /* comment"),
        ('{\n  "a": "no end\n}', 2, 15, "unterminated string (the closing quote is missing)"),
        ('{"a": "\\q"}', 1, 8, "invalid \\escape"),
        ("{\n  'a': 1\n}", 2, 3, "expected a quoted key or '}', found \"'\""),
        ('{"a": 1} {"b": 2}', 1, 10, "unexpected text after the end of the JSON value"),
    ],
)
def test_json_syntax_errors_name_line_and_column(
    worktree: Path, global_dir: Path, text: str, line: int, column: int, message: str
) -> None:
    path = write(worktree / "opencode.jsonc", text)
    (problem,) = load_config(worktree).problems
    assert (problem.file, problem.line, problem.column, problem.message) == (
        path,
        line,
        column,
        message,
    )
    assert str(problem) == f"{path}:{line}:{column}: {message}"
    assert problem.sentence() == (
        f"toolhost: could not use {path} (line {line}, column {column}: {message}). "
        "Until it is fixed, every tool asks first, and every denial it and the other config "
        "files state still applies."
    )


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        (
            '{\n  "tools": {\n    "bash": "no"\n  }\n}',
            3,
            "tools.bash",
            'expected true or false, got "no"',
        ),
        (
            '{\n  "permission": {\n    "bash": {\n      "rm *": "never"\n    }\n  }\n}',
            4,
            'permission.bash["rm *"]',
            'expected one of allow, ask, deny, got "never"',
        ),
        (
            '{\n  "permission": {\n    "edit": ["ask"]\n  }\n}',
            3,
            "permission.edit",
            'expected an action (allow, ask, deny) or an object of pattern to action, got ["ask"]',
        ),
        (
            '{"permission": "maybe"}',
            1,
            "permission",
            'expected one of allow, ask, deny, got "maybe"',
        ),
        (
            '{\n  "tool_output": {\n    "max_bytes": -1\n  }\n}',
            3,
            "tool_output.max_bytes",
            "expected a positive integer, got -1",
        ),
        (
            '{\n  "tools": []\n}',
            2,
            "tools",
            "expected an object of tool name to true/false, got []",
        ),
    ],
)
def test_wrong_types_in_json_name_file_line_and_key(
    worktree: Path, global_dir: Path, text: str, line: int, key: str, message: str
) -> None:
    path = write(worktree / "opencode.json", text)
    (problem,) = load_config(worktree).problems
    assert (problem.file, problem.line, problem.key, problem.message) == (path, line, key, message)
    assert str(problem) == f"{path}:{line}: {key}: {message}"


def test_a_json_file_that_is_not_an_object(worktree: Path, global_dir: Path) -> None:
    write(worktree / "opencode.json", "[1, 2]")
    (problem,) = load_config(worktree).problems
    assert problem.message == "the config must be an object, got [1, 2]"


def test_a_file_that_is_not_utf8_is_a_problem(worktree: Path, global_dir: Path) -> None:
    path = worktree / "opencode.json"
    path.write_bytes(b'{"tools": {"bash": "\xff"}}')
    (problem,) = load_config(worktree).problems
    assert problem.file == path
    assert problem.message.startswith("could not read it:")


# -- the YAML registry ---------------------------------------------------------------


@pytest.fixture
def registry(worktree: Path, global_dir: Path) -> LoadedConfig:
    write(worktree / ".opencode" / "tools.yaml", REGISTRY)
    loaded = load_config(worktree)
    assert loaded.problems == ()
    return loaded


def test_enabled_false_disables_the_tool(registry: LoadedConfig) -> None:
    assert not registry.config.is_enabled("webfetch")
    assert registry.config.is_enabled("bash")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm install", "allow"),
        ("npm", "allow"),
        ("git status", "allow"),
        ("node x.js", "allow"),
        ("rm -rf x", "deny"),
        ("rm", "deny"),
        ("sudo npm install", "deny"),
        ("ls", "ask"),
        ("npmx install", "ask"),  # "npm *" is the command npm, not a prefix
        ("rmdir x", "ask"),
    ],
)
def test_command_lists(registry: LoadedConfig, command: str, expected: str) -> None:
    assert action(registry, "bash", command) == expected


def test_denied_commands_win_over_allowed_in_the_same_file(
    worktree: Path, global_dir: Path
) -> None:
    write(
        worktree / ".opencode" / "tools.yaml",
        """\
tools:
  - name: bash
    permissions:
      denied_commands: ["git push"]
      allowed_commands: ["git"]
""",
    )
    loaded = load_config(worktree)
    assert action(loaded, "bash", "git push origin") == "deny"
    assert action(loaded, "bash", "git log") == "allow"


def test_structured_lists_are_kept(registry: LoadedConfig, home: Path) -> None:
    config = registry.config
    assert config.allowed_commands == ("npm", "git", "node")
    assert config.denied_commands == ("rm", "sudo")
    assert config.allowed_dirs == (str(home / "projects"),)


def test_allowed_dirs_expand_home(registry: LoadedConfig, home: Path) -> None:
    projects = home / "projects"
    assert action(registry, "external_directory", f"{projects}/*") == "allow"
    assert action(registry, "external_directory", f"{projects}/app/src/*") == "allow"
    assert action(registry, "external_directory", str(projects)) == "allow"
    assert action(registry, "external_directory", f"{home}/projects-old/*") == "ask"
    assert action(registry, "external_directory", f"{home}/*") == "ask"


def test_allowed_dirs_on_any_tool_and_with_home_variable(
    worktree: Path, global_dir: Path, home: Path, tmp_path: Path
) -> None:
    real = tmp_path / "real-shared"
    real.mkdir()
    (home / "shared").symlink_to(real)
    write(
        worktree / ".opencode" / "tools.yaml",
        """\
tools:
  - name: read
    permissions:
      allowed_dirs: ["$HOME/shared/"]
""",
    )
    loaded = load_config(worktree)
    assert loaded.problems == ()
    # The external-directory check compares symlink-resolved paths: both forms match.
    assert action(loaded, "external_directory", f"{home}/shared/a/*") == "allow"
    assert action(loaded, "external_directory", f"{os.path.realpath(real)}/a/*") == "allow"
    assert action(loaded, "bash", "ls") == "allow"  # no command lists: bash is untouched


def test_custom_entries_enable_and_disable_by_name(worktree: Path, global_dir: Path) -> None:
    write(global_dir / "opencode.json", '{"tools": {"deploy": false}}')
    write(
        worktree / ".opencode" / "tools.yaml",
        "tools:\n  - name: deploy\n    type: custom\n    enabled: true\n"
        "  - name: lint\n    type: custom\n    enabled: false\n"
        "  - name: format\n    type: custom\n",
    )
    config = load_config(worktree).config
    assert config.is_enabled("deploy")
    assert not config.is_enabled("lint")
    assert config.is_enabled("format")


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        (
            REGISTRY.replace("      allowed_dirs", "      alowed_commands: []\n      allowed_dirs"),
            8,
            "tools[0].permissions.alowed_commands",
            "unknown key (expected one of allowed_commands, denied_commands, allowed_dirs)",
        ),
        (
            REGISTRY.replace("enabled: false", 'enabled: "yes"'),
            11,
            "tools[1].enabled",
            'expected true or false, got "yes"',
        ),
        (
            REGISTRY.replace('    type: "builtin"\n    enabled: false', "    typ: builtin"),
            10,
            "tools[1].typ",
            "unknown key (expected one of name, type, enabled, permissions, sandbox)",
        ),
        (
            REGISTRY.replace('type: "builtin"          #', 'type: "builtn"  #'),
            3,
            "tools[0].type",
            'expected one of builtin, custom, got "builtn"',
        ),
        (
            REGISTRY.replace('["rm", "sudo"]', '"rm"'),
            7,
            "tools[0].permissions.denied_commands",
            'expected a list, got "rm"',
        ),
        (
            REGISTRY.replace('["npm", "git", "node"]', '["npm",\n        3]'),
            7,
            "tools[0].permissions.allowed_commands[1]",
            "expected a string, got 3",
        ),
        (
            REGISTRY.replace('  - name: "webfetch"\n', "  - \n"),
            10,
            "tools[1].name",
            "required key is missing",
        ),
        ("tool:\n  - name: bash\n", 1, "tool", "unknown key (expected one of tools)"),
        (
            REGISTRY.replace('name: "webfetch"', 'name: "webfetsh"'),
            9,
            "tools[1].name",
            '"webfetsh" is not a built-in tool',
        ),
        (
            REGISTRY.replace(
                'name: "webfetch"\n    type: "builtin"\n    enabled: false',
                ('name: "webfetch"\n    permissions:\n      denied_commands: [curl]'),
            ),
            11,
            "tools[1].permissions.denied_commands",
            "commands can only be listed for the bash tool",
        ),
        (
            REGISTRY.replace('["~/projects"]', '["projects"]'),
            8,
            "tools[0].permissions.allowed_dirs[0]",
            'expected an absolute directory (or one starting with ~ or $HOME), got "projects"',
        ),
    ],
)
def test_yaml_mistakes_name_file_line_and_key(
    worktree: Path, global_dir: Path, text: str, line: int, key: str, message: str
) -> None:
    path = write(worktree / ".opencode" / "tools.yaml", text)
    problems = load_config(worktree).problems
    assert len(problems) == 1, problems
    (problem,) = problems
    assert (problem.file, problem.line, problem.key) == (path, line, key)
    assert problem.message.startswith(message)
    assert str(problem).startswith(f"{path}:{line}: {key}: {message}")


def test_yaml_syntax_error_names_line_and_column(worktree: Path, global_dir: Path) -> None:
    path = write(worktree / ".opencode" / "tools.yaml", "tools:\n  - name: bash\n   enabled: x\n")
    (problem,) = load_config(worktree).problems
    assert (problem.file, problem.line, problem.column) == (path, 3, 4)
    assert problem.message.startswith("expected <block end>, but found")


def test_yaml_control_character_names_line_and_column(worktree: Path, global_dir: Path) -> None:
    write(worktree / ".opencode" / "tools.yaml", "tools:\n  - name: b\x07sh\n")
    (problem,) = load_config(worktree).problems
    assert (problem.line, problem.column) == (2, 12)
    assert problem.message == "special characters are not allowed (0x7)"


def test_yaml_duplicate_key_is_an_error(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / ".opencode" / "tools.yaml",
        "tools:\n  - name: bash\n    enabled: true\n    enabled: false\n",
    )
    (problem,) = load_config(worktree).problems
    assert (problem.line, problem.message) == (4, 'duplicate key "enabled"')


def test_every_yaml_mistake_is_reported(worktree: Path, global_dir: Path) -> None:
    write(
        worktree / ".opencode" / "tools.yaml",
        "tools:\n  - name: bash\n    enabled: 1\n  - name: read\n    color: red\n",
    )
    loaded = load_config(worktree)
    assert [(p.line, p.key) for p in loaded.problems] == [
        (3, "tools[0].enabled"),
        (5, "tools[1].color"),
    ]
    (notice,) = loaded.notices()
    assert notice.endswith("It has 1 more problem: see the log.")


# -- failing closed ------------------------------------------------------------------


@pytest.fixture
def broken(worktree: Path, global_dir: Path) -> LoadedConfig:
    """A good global registry (denies rm, disables webfetch) and a broken project file."""
    write(global_dir / "tools.yaml", REGISTRY)
    write(global_dir / "opencode.json", '{"tool_output": {"max_lines": 7}}')
    write(
        worktree / "opencode.jsonc",
        '{\n  "permission": {"edit": "deny", "read": "deny"},\n  "tools": {"read": false},\n'
        '  "tool_output": {"max_lines": 3},\n  oops\n}',
    )
    loaded = load_config(worktree)
    assert [(p.file, p.line) for p in loaded.problems] == [(worktree / "opencode.jsonc", 5)]
    return loaded


@pytest.mark.parametrize(
    ("permission", "pattern"),
    [
        ("bash", "ls"),
        ("bash", "npm install"),  # allowed by the good file, now asks
        ("webfetch", "https://example.test"),
        ("websearch", "query"),
        ("task", "general"),
        ("glob", "*.py"),  # every permission, not only those that change things
        ("todowrite", "*"),
    ],
)
def test_failing_closed_makes_every_permission_at_most_ask(
    broken: LoadedConfig, permission: str, pattern: str
) -> None:
    assert action(broken, permission, pattern) == "ask"


def test_failing_closed_keeps_the_deny_rules_that_parsed(broken: LoadedConfig) -> None:
    assert action(broken, "bash", "rm -rf x") == "deny"
    assert action(broken, "bash", "sudo ls") == "deny"
    assert not broken.config.is_enabled("webfetch")


def test_failing_closed_keeps_what_the_broken_file_forbids(broken: LoadedConfig) -> None:
    """Salvaged past the syntax error: its denials and the tools it switches off."""
    assert action(broken, "edit", "src/a.py") == "deny"
    assert action(broken, "read", "src/a.py") == "deny"
    assert not broken.config.is_enabled("read")
    # What it allows is not used: its tool_output limit is not either.
    assert action(broken, "read", ".env") == "deny"
    assert broken.config.tool_output.max_lines == 7
    assert broken.config.tool_output.max_bytes == MAX_BYTES


def test_failing_closed_makes_the_allowed_dirs_ask(broken: LoadedConfig, home: Path) -> None:
    assert action(broken, "external_directory", f"{home}/projects/a/*") == "ask"
    assert action(broken, "external_directory", "/elsewhere/*") == "ask"


def test_failing_closed_never_weakens_an_agent_deny(broken: LoadedConfig) -> None:
    assert action(broken, "edit", "src/a.py", agent="plan") == "deny"
    assert action(broken, "edit", "src/a.py", agent="explore") == "deny"
    assert action(broken, "bash", "ls", agent="explore") == "ask"


def test_failing_closed_rules_alone_are_stricter(broken: LoadedConfig) -> None:
    # What a host that appends Config.rules after its own gets, without effective_rules.
    base = default_rules(output_dir())
    assert evaluate("grep", "x", base, broken.config.rules).action == "ask"
    assert evaluate("edit", "a.py", base, broken.config.rules).action == "deny"
    assert evaluate("bash", "rm x", base, broken.config.rules).action == "deny"


def test_broken_initialization_options_fail_closed(worktree: Path, global_dir: Path) -> None:
    loaded = load_config(worktree, {"permission": {"bash": 5}, "tools": {"read": False}})
    (problem,) = loaded.problems
    assert (problem.file, problem.line, problem.key) == (None, None, "permission.bash")
    assert str(problem).startswith("initializationOptions.config: permission.bash: expected")
    assert action(loaded, "bash", "ls") == "ask"
    assert not loaded.config.is_enabled("read")  # what it switches off stays off


def test_a_fixed_file_stops_failing_closed(worktree: Path, global_dir: Path) -> None:
    path = write(worktree / "opencode.json", '{"permission": {"bash": "allow",}')
    assert action(load_config(worktree), "bash", "ls") == "ask"
    write(path, '{"permission": {"bash": "allow"}}')
    loaded = load_config(worktree)
    assert loaded.problems == ()
    assert action(loaded, "bash", "ls") == "allow"


async def test_the_host_asks_before_writing_while_failing_closed(
    worktree: Path, global_dir: Path, editor: RecordingEditor
) -> None:
    write(worktree / "opencode.json", "{")
    host = ToolHost(worktree, config=load_config(worktree).config)
    result = await host.execute(
        "write", {"filePath": str(worktree / "a.txt"), "content": "x"}, editor=editor
    )
    assert not result.is_error, result.output
    assert [ask.permission for ask in editor.asks] == ["edit"]


# -- tool output limits and the initializationOptions converter -------------------------


def test_tool_output_comes_from_the_last_source_that_sets_it(
    worktree: Path, global_dir: Path
) -> None:
    write(global_dir / "opencode.json", '{"tool_output": {"max_lines": 100, "max_bytes": 2000}}')
    write(worktree / "opencode.json", '{"tool_output": {"max_lines": 50}}')
    limits = load_config(worktree, {"tool_output": {"max_bytes": 999}}).config.tool_output
    assert (limits.max_lines, limits.max_bytes) == (50, 999)


def test_config_from_opencode_still_converts_one_object() -> None:
    config = config_from_opencode(
        {"tools": {"bash": False}, "permission": {"edit": "ask"}, "tool_output": {"max_lines": 5}}
    )
    assert not config.is_enabled("bash")
    assert config.rules == [Rule("edit", "*", "ask")]
    assert config.tool_output.max_lines == 5
    assert config.problems == ()
    with pytest.raises(ConfigError, match=r'^tools\.bash: expected true or false, got "no"$'):
        config_from_opencode({"tools": {"bash": "no"}})


# -- the JSONC parser against the standard library ----------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@settings(max_examples=200)
@given(json_values)
def test_jsonc_reads_what_json_writes_with_comments_on_every_line(value: object) -> None:
    text = json.dumps(value, indent=2)
    assert jsonc.parse(text).value == json.loads(text)
    # Every line break in indented JSON is between tokens, so comments can go there.
    commented = "\n".join(f"/* {i} */ {line} // {line}" for i, line in enumerate(text.split("\n")))
    assert jsonc.parse(commented).value == json.loads(text)
