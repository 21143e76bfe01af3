"""tools/shell_parse.py and tools/arity.py: every command a line would run is found.

Permission patterns, and later the deny-by-any-route rules, are built on this walk:
a command the walk misses is a command nobody is asked about.
"""

from __future__ import annotations

import pytest

from tools.bash.arity import ARITY, prefix
from tools.bash.shell_parse import analyse


def texts(line: str) -> list[str]:
    parsed = analyse(line)
    assert not parsed.parse_error, line
    return [c.text for c in parsed.commands]


def test_pipelines_and_lists_each_yield_their_commands_with_arity_globs() -> None:
    parsed = analyse("git checkout main && npm run dev x | grep y")
    assert [c.text for c in parsed.commands] == ["git checkout main", "npm run dev x", "grep y"]
    assert [c.always for c in parsed.commands] == ["git checkout *", "npm run dev *", "grep *"]
    assert parsed.commands[1].tokens == ("npm", "run", "dev", "x")


def test_every_list_operator_separates_commands() -> None:
    assert texts("a 1; b 2 || c 3 & d 4 |& e 5") == ["a 1", "b 2", "c 3", "d 4", "e 5"]


def test_subshells_and_brace_groups_are_entered() -> None:
    assert texts("( cd /tmp; ls ) && { echo a; }") == ["cd /tmp", "ls", "echo a"]


def test_substitutions_nested_inside_double_quoted_arguments_are_found() -> None:
    assert texts('echo "a $(ls $(pwd)) `date` ${x:-$(id -u)}"') == [
        'echo "a $(ls $(pwd)) `date` ${x:-$(id -u)}"',
        "ls $(pwd)",
        "pwd",
        "date",
        "id -u",
    ]


def test_process_substitution_in_both_directions() -> None:
    assert texts("diff <(sort a) >(tee b)") == ["diff <(sort a) >(tee b)", "sort a", "tee b"]


def test_substitutions_in_assignments_declarations_and_tests_are_found() -> None:
    line = "x=$(ls); export A=$(pwd); [[ -n $(whoami) ]]; local b=`id`"
    assert texts(line) == ["ls", "pwd", "whoami", "id"]


def test_loops_conditionals_and_function_bodies_are_entered() -> None:
    line = (
        'for f in *; do rm "$f"; done; if true; then ls; fi; '
        "while false; do :; done; f() { touch x; }"
    )
    assert texts(line) == ['rm "$f"', "true", "ls", "false", ":", "touch x"]


def test_a_redirected_command_is_its_whole_statement_and_redirections_are_no_tokens() -> None:
    parsed = analyse("echo hi > out.txt 2>&1; cat < in.txt")
    assert [c.text for c in parsed.commands] == ["echo hi > out.txt 2>&1", "cat < in.txt"]
    assert [c.tokens for c in parsed.commands] == [("echo", "hi"), ("cat",)]


def test_a_command_inside_a_redirection_target_is_found() -> None:
    assert texts("echo hi > $(mktemp)") == ["echo hi > $(mktemp)", "mktemp"]


def test_variable_assignments_prefixing_a_command_are_not_tokens() -> None:
    (command,) = analyse("FOO=1 BAR=2 make build").commands
    assert command.tokens == ("make", "build")
    assert command.text == "FOO=1 BAR=2 make build"
    assert command.always == "make build *"


def test_here_document_text_is_data_but_its_substitutions_run_unless_quoted() -> None:
    assert texts("cat <<EOF\nrm -rf x $(whoami)\nEOF") == [
        "cat <<EOF\nrm -rf x $(whoami)\nEOF",
        "whoami",
    ]
    assert texts("cat <<'EOF'\nrm -rf x $(whoami)\nEOF") == ["cat <<'EOF'\nrm -rf x $(whoami)\nEOF"]


def test_commands_come_outer_first_in_source_order() -> None:
    assert texts("a $(b $(c)) && d `e`") == ["a $(b $(c))", "b $(c)", "c", "d `e`", "e"]


def test_tokens_keep_quotes_and_words_remove_them() -> None:
    (command,) = analyse('"rm" a\\ b \'c d\' "e\\"f" g"h"\'i\' ~/j 5').commands
    assert command.tokens == ('"rm"', "a\\ b", "'c d'", '"e\\"f"', "g\"h\"'i'", "~/j", "5")
    assert command.words == ("rm", "a b", "c d", 'e"f', "ghi", "~/j", "5")
    assert command.name == "rm"
    assert command.always == '"rm" *'  # OpenCode keys "always" on the raw token


def test_words_that_depend_on_expansion_are_unknown() -> None:
    command = analyse('ls "$HOME" pre$(pwd) "${x}y" $((1+2)) plain').commands[0]
    # $((...)) is not a token kind at all (OpenCode's list), the others are unknown
    assert command.tokens == ("ls", '"$HOME"', "pre$(pwd)", '"${x}y"', "plain")
    assert command.words == ("ls", None, None, None, "plain")
    (dynamic,) = [c for c in analyse("$(which rm) -rf x").commands if c.tokens[0] != "which"]
    assert dynamic.name is None


def test_a_bare_integer_argument_is_a_token() -> None:
    (command,) = analyse("timeout 5 rm x").commands
    assert command.tokens == ("timeout", "5", "rm", "x")
    assert command.always == "timeout *"


@pytest.mark.parametrize(
    "line",
    ['echo "unterminated', "echo $(ls", "if true; then ls", "ls |", "(echo a"],
)
def test_syntax_errors_and_missing_tokens_are_reported(line: str) -> None:
    assert analyse(line).parse_error


def test_recovered_commands_are_still_listed_after_a_syntax_error() -> None:
    parsed = analyse('rm -rf victim\necho "oops')
    assert parsed.parse_error
    assert parsed.commands[0].text == "rm -rf victim"
    assert parsed.commands[1].words == ("echo", None)  # a broken string has no known value


def test_valid_lines_are_not_parse_errors() -> None:
    assert not analyse("ls -la && echo 'a b' | wc -l > n.txt").parse_error
    assert not analyse("").parse_error
    assert analyse("").commands == []


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git checkout main", "git checkout"),
        ("npm run dev script", "npm run dev"),
        ("docker compose up svc", "docker compose up"),
        ("touch foo", "touch"),
        ("npm install", "npm install"),
        ("git remote add origin url", "git remote add"),
        ("aws s3 ls bucket", "aws s3 ls"),
        ("python -m venv env", "python -m"),
        ("python3 script.py", "python3"),
        ("gh pr list", "gh pr list"),
        ("kubectl rollout restart deploy/api", "kubectl rollout restart"),
        ("npm run", "npm run"),
        ("ls", "ls"),
    ],
)
def test_arity_prefix_examples(command: str, expected: str) -> None:
    assert " ".join(prefix(command.split())) == expected


def test_arity_of_no_tokens_is_empty() -> None:
    assert prefix([]) == []


def test_the_arity_table_holds_opencodes_entries() -> None:
    assert len(ARITY) == 145
    assert {ARITY[k] for k in ("cat", "sudo", "xargs", "timeout")} == {1}
    assert {ARITY[k] for k in ("git", "redis-cli", "yarn", "systemctl")} == {2}
    assert {ARITY[k] for k in ("aws", "sfdx", "docker compose", "yarn run", "vault kv")} == {3}
