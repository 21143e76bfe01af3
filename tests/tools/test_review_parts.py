"""The review's parts on their own: hunks cut from a diff, the rebase of an agent's
change onto the disk, and rules saved to (and removed from) config files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.changes.diff import diff_texts
from tools.changes.hunks import apply_hunks, parse_hunks
from tools.changes.rebase import rebase
from tools.config.saved import ConfigRuleStore
from tools.permission.approvals import SaveError
from tools.permission.asks import describe_patterns

TEXT = "".join(f"l{n}\n" for n in range(1, 21))
lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e"]), max_size=12)


@given(lines, lines)
def test_every_hunk_subset_applies_and_all_of_them_give_the_new_text(
    old: list[str], new: list[str]
) -> None:
    old_text, new_text = "".join(old), "".join(new)
    hunks = parse_hunks("f", diff_texts(old_text, new_text, "f").unified)
    assert apply_hunks(old_text, hunks) == new_text
    assert apply_hunks(old_text, []) == old_text
    for hunk in hunks:
        apply_hunks(old_text, [hunk])  # each fits alone


def test_hunk_ids_and_headers_follow_the_diff() -> None:
    new = TEXT.replace("l2\n", "L2\n").replace("l18\n", "L18\n")
    hunks = parse_hunks("src/f.py", diff_texts(TEXT, new, "src/f.py").unified)
    assert [(h.id, h.header) for h in hunks] == [
        ("src/f.py#1", "@@ -1,5 +1,5 @@"),
        ("src/f.py#2", "@@ -15,6 +15,6 @@"),
    ]
    assert apply_hunks(TEXT, [hunks[1]]) == TEXT.replace("l18\n", "L18\n")


def test_rebase_keeps_the_users_unsaved_lines_off_the_disk() -> None:
    buffer = TEXT.replace("l10\n", "l10 typed\n")
    proposed = buffer.replace("l2\n", "TWO\n")
    assert rebase(buffer, proposed, TEXT).text == TEXT.replace("l2\n", "TWO\n")


def test_rebase_reports_an_overlap_including_a_bordering_line() -> None:
    buffer = TEXT.replace("l10\n", "l10 typed\n")
    assert rebase(buffer, buffer.replace("l10 typed\n", "X\n"), TEXT).overlaps == ((10, 10),)
    assert rebase(buffer, buffer.replace("l11\n", "X\n"), TEXT).text is None  # next to it


def test_always_labels_say_what_they_cover() -> None:
    assert describe_patterns("bash", ["git status *"]) == "commands starting `git status`"
    assert describe_patterns("edit", ["*.py"]) == "files matching *.py (in any folder)"
    assert describe_patterns("edit", ["src/*"]) == "files in src/ (and its subfolders)"
    assert describe_patterns("edit", ["src/a.py"]) == "the file src/a.py"
    assert describe_patterns("webfetch", ["*"]) == "every `webfetch` call"


def test_saved_rules_go_to_the_last_read_project_file_and_come_out_again(
    tmp_path: Path,
) -> None:
    (tmp_path / ".opencode").mkdir()
    target = tmp_path / ".opencode" / "opencode.json"
    target.write_text(json.dumps({"model": "x", "permission": "ask"}))
    store = ConfigRuleStore(tmp_path)
    assert store.save("project", "bash", ["git status *"]) == target
    data = json.loads(target.read_text())
    assert data == {"model": "x", "permission": {"*": "ask", "bash": {"git status *": "allow"}}}
    (saved,) = [a for a in store.saved() if a.scope == "project"]
    assert (saved.rule.pattern, saved.label) == ("git status *", "commands starting `git status`")
    store.remove(saved)
    assert json.loads(target.read_text())["permission"] == {"*": "ask"}


def test_removing_the_last_rule_removes_what_toolhost_created(tmp_path: Path) -> None:
    store = ConfigRuleStore(tmp_path)
    created = store.save("project", "bash", ["ls *"])
    assert created == tmp_path / "opencode.json"
    mine = tmp_path / "other"
    mine.mkdir()
    (mine / "opencode.json").write_text('{"$schema": "https://opencode.ai/config.json"}')
    theirs = ConfigRuleStore(mine)
    theirs.save("project", "bash", ["ls *"])
    for each in (store, theirs):
        (saved,) = [a for a in each.saved() if a.scope == "project"]
        each.remove(saved)
    assert not created.exists()  # toolhost made it, and it now configured nothing
    # The person's own file stays, without an empty "permission" section.
    assert json.loads((mine / "opencode.json").read_text()) == {
        "$schema": "https://opencode.ai/config.json"
    }
    # Every write is on record, so the server can tell toolhost's own from others'.
    (first, second) = store.writes[created]
    assert first[0] is None and second[1] is None
    assert store.own_write(created, None, first[1])
    assert not store.own_write(created, None, "something else")


def test_removing_the_last_user_rule_removes_the_folder_made_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"  # $XDG_CONFIG_HOME exists; its opencode/ does not
    config.mkdir()
    monkeypatch.delenv("OPENCODE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    store = ConfigRuleStore(tmp_path)
    assert store.save("user", "bash", ["printf *"]) == config / "opencode" / "opencode.json"
    (saved,) = [a for a in store.saved() if a.scope == "user"]
    store.remove(saved)
    assert not (config / "opencode").exists()  # made for the rule, empty again: gone
    assert config.is_dir()
    # Where someone else's file has joined it meanwhile, the folder stays.
    store.save("user", "bash", ["printf *"])
    (config / "opencode" / "tui.json").write_text("{}")
    (saved,) = [a for a in store.saved() if a.scope == "user"]
    store.remove(saved)
    assert sorted(p.name for p in (config / "opencode").iterdir()) == ["tui.json"]


def test_a_config_with_comments_is_never_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "opencode.jsonc"
    target.write_text('{\n  // mine\n  "permission": {}\n}\n')
    with pytest.raises(SaveError, match="comments or trailing commas") as error:
        ConfigRuleStore(tmp_path).save("project", "edit", ["a.py"])
    assert '{"permission": {"edit": {"a.py": "allow"}}}' in str(error.value)
    assert "// mine" in target.read_text()
