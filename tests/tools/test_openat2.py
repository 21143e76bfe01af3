"""One ``openat2`` that follows no link, and the folder walk it stands in for, agree."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tools.fsio import dirfd, openat2
from tools.fsio.paths import real


@pytest.fixture(params=["openat2", "walk"])
def opening(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(openat2, "_call", None)
    return str(request.param)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = Path(real(tmp_path))  # /tmp may itself be a link on some systems
    (base / "a" / "b").mkdir(parents=True)
    (base / "a" / "b" / "f.txt").write_text("data\n")
    (base / "link").symlink_to(base / "a")
    (base / "a" / "flink").symlink_to(base / "a" / "b" / "f.txt")
    return base


def test_openat2_is_there_on_this_kernel() -> None:
    # The suite runs on Linux 5.6+: the fast way must really be taken, not silently skipped.
    assert openat2.has_no_symlinks("/")


def test_a_path_without_links_opens_in_both_ways(tree: Path, opening: str) -> None:
    fd = dirfd.open_file(tree / "a" / "b" / "f.txt")
    try:
        assert os.read(fd, 100) == b"data\n"
    finally:
        os.close(fd)


@pytest.mark.parametrize("through", ["link/b/f.txt", "a/flink"])
def test_a_link_on_the_way_is_refused_in_both_ways(tree: Path, opening: str, through: str) -> None:
    with pytest.raises(dirfd.PathChanged):
        dirfd.open_file(tree / through)


def test_a_missing_file_is_not_found_in_both_ways(tree: Path, opening: str) -> None:
    with pytest.raises(FileNotFoundError):
        dirfd.open_file(tree / "a" / "missing.txt")


def test_openat2_names_the_link_as_eloop(tree: Path) -> None:
    with pytest.raises(OSError) as caught:
        openat2.open_no_symlinks(str(tree / "link" / "b"), os.O_PATH | os.O_DIRECTORY)
    assert caught.value.errno == errno.ELOOP


def test_a_folder_is_its_own_real_path_only_without_links(tree: Path) -> None:
    assert openat2.has_no_symlinks(str(tree / "a" / "b"))
    assert not openat2.has_no_symlinks(str(tree / "link" / "b"))
    assert not openat2.has_no_symlinks(str(tree / "a" / "missing"))
    assert not openat2.has_no_symlinks("a/b")  # relative: never judged here


def test_a_path_is_its_own_real_path_only_without_links_its_name_included(tree: Path) -> None:
    assert openat2.is_own_real_path(str(tree / "a" / "b" / "f.txt"))
    assert openat2.is_own_real_path(str(tree / "a" / "b"))  # a folder too
    assert not openat2.is_own_real_path(str(tree / "a" / "flink"))  # the name is a link
    assert not openat2.is_own_real_path(str(tree / "link" / "b" / "f.txt"))  # a folder is
    assert not openat2.is_own_real_path(str(tree / "a" / "missing.txt"))
    assert not openat2.is_own_real_path("a/b/f.txt")  # relative: never judged here


def test_a_fifo_is_judged_without_being_opened_for_reading(tree: Path) -> None:
    fifo = tree / "a" / "pipe"
    os.mkfifo(fifo)
    assert openat2.is_own_real_path(str(fifo))  # O_PATH: no reader waits for a writer


def test_without_openat2_nothing_is_claimed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openat2, "_call", None)
    assert not openat2.has_no_symlinks(str(tree / "a" / "b"))
    assert not openat2.is_own_real_path(str(tree / "a" / "b" / "f.txt"))
    with pytest.raises(openat2.Unsupported):
        openat2.open_no_symlinks(str(tree / "a"), os.O_PATH)


def test_a_nul_byte_is_refused_as_os_open_refuses_it(tree: Path) -> None:
    # ctypes would pass the bytes up to the NUL, a shorter path than the one checked.
    with pytest.raises(ValueError, match="null byte"):
        openat2.open_no_symlinks(str(tree / "a") + "\0/../../etc", os.O_PATH)
    with pytest.raises(ValueError, match="null byte"):
        os.open(str(tree / "a") + "\0/x", os.O_PATH)
