"""``tools.config.dirs.matches_now``: the temp folder is listed again only when it changed.

Every bash call hides the ACP relays' folders, found by listing the temp folder
(hundreds of entries). The listing is kept while the folder's ctime is the one it saw,
and was not taken within a clock tick of that ctime.
"""

from __future__ import annotations

import glob
import time
from pathlib import Path

import pytest

from tools.config import dirs


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The patterns actually listed (``glob.glob`` calls), with no listing kept from before."""
    listed: list[str] = []
    real = glob.glob

    def counting(pattern: str) -> list[str]:
        listed.append(pattern)
        return real(pattern)

    monkeypatch.setattr(glob, "glob", counting)
    monkeypatch.setattr(dirs, "_listings", {})
    return listed


def settled(folder: Path) -> Path:
    folder.mkdir()
    (folder / "toolhost-acp-one").mkdir()
    (folder / "other").mkdir()
    time.sleep(0.15)  # older than a clock tick
    return folder


def test_an_unchanged_folder_is_listed_once(tmp_path: Path, listings: list[str]) -> None:
    pattern = str(settled(tmp_path / "temp") / "toolhost-acp-*")
    first = dirs.matches_now(pattern)
    assert first == [str(tmp_path / "temp" / "toolhost-acp-one")]
    assert dirs.matches_now(pattern) == first
    assert listings == [pattern]


def test_a_name_made_or_removed_is_seen_at_once(tmp_path: Path, listings: list[str]) -> None:
    temp = settled(tmp_path / "temp")
    pattern = str(temp / "toolhost-acp-*")
    dirs.matches_now(pattern)
    (temp / "toolhost-acp-two").mkdir()
    assert sorted(dirs.matches_now(pattern)) == [
        str(temp / n) for n in ("toolhost-acp-one", "toolhost-acp-two")
    ]
    (temp / "toolhost-acp-one").rmdir()
    assert dirs.matches_now(pattern) == [str(temp / "toolhost-acp-two")]
    (temp / "toolhost-acp-two").rename(temp / "toolhost-acp-three")
    assert dirs.matches_now(pattern) == [str(temp / "toolhost-acp-three")]


def test_a_folder_changed_within_a_tick_is_listed_every_time(
    tmp_path: Path, listings: list[str]
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    (temp / "toolhost-acp-one").mkdir()  # just now: the ctime may not show the next change
    pattern = str(temp / "toolhost-acp-*")
    dirs.matches_now(pattern)
    dirs.matches_now(pattern)
    assert listings == [pattern, pattern]


def test_a_missing_folder_matches_nothing(tmp_path: Path, listings: list[str]) -> None:
    assert dirs.matches_now(str(tmp_path / "gone" / "toolhost-acp-*")) == []
