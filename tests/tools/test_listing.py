"""``tools.fsio.listing``: a folder is listed again only when it changed.

Every bash call's plan looks in the temp folder (for the ACP relays' folders) and a few
others; a listing is kept while the folder's ctime is the one it saw, and never when it
was taken within a clock tick of that ctime.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tools.fsio import listing


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders actually listed (``os.listdir`` calls), with nothing kept from before."""
    folders: list[str] = []
    real = os.listdir

    def counting(folder: str) -> list[str]:
        folders.append(folder)
        return real(folder)

    monkeypatch.setattr(os, "listdir", counting)
    monkeypatch.setattr(listing, "_kept", {})
    return folders


def settled(folder: Path) -> Path:
    folder.mkdir()
    for name in ("toolhost-acp-one", "other", ".toolhost-acp-hidden"):
        (folder / name).mkdir()
    time.sleep(0.15)  # older than a clock tick
    return folder


def test_an_unchanged_folder_is_listed_once(tmp_path: Path, listed: list[str]) -> None:
    temp = settled(tmp_path / "temp")
    pattern = str(temp / "toolhost-acp-*")
    assert listing.matching(pattern) == [str(temp / "toolhost-acp-one")]
    assert listing.matching(pattern) == [str(temp / "toolhost-acp-one")]
    assert listed == [str(temp)]


def test_a_name_made_removed_or_renamed_is_seen_at_once(tmp_path: Path, listed: list[str]) -> None:
    temp = settled(tmp_path / "temp")
    pattern = str(temp / "toolhost-acp-*")
    listing.matching(pattern)
    (temp / "toolhost-acp-two").mkdir()
    both = [str(temp / "toolhost-acp-one"), str(temp / "toolhost-acp-two")]
    assert listing.matching(pattern) == both
    (temp / "toolhost-acp-one").rmdir()
    assert listing.matching(pattern) == [str(temp / "toolhost-acp-two")]
    (temp / "toolhost-acp-two").rename(temp / "toolhost-acp-three")
    assert listing.matching(pattern) == [str(temp / "toolhost-acp-three")]


def test_a_folder_changed_within_a_tick_is_listed_every_time(
    tmp_path: Path, listed: list[str]
) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    (temp / "toolhost-acp-one").mkdir()  # just now: the ctime may not show the next change
    pattern = str(temp / "toolhost-acp-*")
    listing.matching(pattern)
    listing.matching(pattern)
    assert listed == [str(temp), str(temp)]


def test_matches_as_glob_does(tmp_path: Path, listed: list[str]) -> None:
    """A wildcard does not match a leading dot; a pattern that starts with one does."""
    temp = settled(tmp_path / "temp")
    assert listing.matching(str(temp / "*")) == sorted(
        str(temp / n) for n in ("toolhost-acp-one", "other")
    )
    assert listing.matching(str(temp / ".toolhost-acp-*")) == [str(temp / ".toolhost-acp-hidden")]


def test_a_missing_folder_has_no_names(tmp_path: Path, listed: list[str]) -> None:
    assert listing.names_in(str(tmp_path / "gone")) == []
    assert listing.matching(str(tmp_path / "gone" / "toolhost-acp-*")) == []
