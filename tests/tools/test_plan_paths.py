"""The sandbox plan resolves its paths as ``os.path.realpath`` does, sharing the folders
they have in common (``tools.bash.sandbox.plan._existing``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.bash.sandbox.plan import _existing


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for folder in ("a/b/c", "x/y", "a/.git/hooks"):
        (tmp_path / folder).mkdir(parents=True)
    links = {
        "a/lnk": str(tmp_path / "x"),  # absolute
        "a/rel": "../x/y",  # relative
        "a/dangling": str(tmp_path / "nowhere"),
        "a/loop1": "loop2",
        "a/loop2": "loop1",
        "a/root": "/",
        "a/up": "..",
        "a/dot": ".",
        "x/yl": "y",  # a link below a link
    }
    for name, target in links.items():
        os.symlink(target, tmp_path / name)
    return tmp_path


CASES = [
    "a/b/c",
    "a/b/c/",
    "a/lnk/y",
    "a/lnk/y/",
    "a/lnk/yl",
    "a/lnk/yl/missing",
    "a/rel",
    "a/dangling",
    "a/dangling/x",
    "a/loop1",
    "a/loop1/x",
    "a/lnk/../b",
    "a/./b",
    "/a/b",  # a doubled slash once joined
    "a/b/missing",
    "a/.git/hooks",
    "a/root/tmp",
    "a/up/x/y",
    "a/dot/dot/b",
]


@pytest.mark.parametrize("case", CASES)
def test_each_path_resolves_as_realpath_does(tree: Path, case: str) -> None:
    path = f"{tree}/{case}"
    expected = [os.path.realpath(path)] if os.path.lexists(path) else []
    assert _existing([path]) == expected


def test_paths_resolved_together_agree_with_realpath(tree: Path) -> None:
    paths = [f"{tree}/{case}" for case in CASES] + ["/", "relative/path"]
    assert _existing(paths) == [os.path.realpath(p) for p in paths if os.path.lexists(p)]
