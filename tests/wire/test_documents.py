"""A read serves an open buffer only while it holds unsaved changes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.wire.conftest import WireClient, connect, make_project

pytestmark = pytest.mark.asyncio(loop_scope="module")

MESSAGES = (f"msg_{n}" for n in itertools.count())


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("documents"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root) as client:
        yield client


async def read(client: WireClient, path: Path) -> str:
    # One message per read, as a model's turns are: repeating a call within a message
    # is what the doom-loop check asks about.
    result = await client.execute("read", {"filePath": str(path)}, messageID=next(MESSAGES))
    assert result["isError"] is False, result["output"]
    return result["output"]


def change(client: WireClient, uri: str, version: int, line: int, text: str) -> None:
    """Replace the start of ``line`` (incremental sync) with ``text``."""
    start = types.Position(line, 0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version, uri),
            [types.TextDocumentContentChangePartial(types.Range(start, start), text)],
        )
    )


def save(client: WireClient, uri: str) -> None:
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
    )


async def test_unsaved_changes_are_read_then_the_disk_after_save(
    client: WireClient, root: Path
) -> None:
    path = root / "buffer.txt"
    path.write_text("first\nsecond\n")
    uri = await client.open(path)
    assert "1: first" in await read(client, path)  # clean buffer: the disk

    change(client, uri, 2, 1, "edited ")
    output = await read(client, path)
    assert "2: edited second" in output
    assert path.read_text() == "first\nsecond\n"  # the disk is untouched

    path.write_text("first\nedited second\n")  # what the editor's save writes
    save(client, uri)
    path.write_text("changed by a command\n")  # and then something else changes it
    assert "1: changed by a command" in await read(client, path)


async def test_a_clean_buffer_never_hides_a_newer_disk(client: WireClient, root: Path) -> None:
    path = root / "clean.txt"
    path.write_text("as opened\n")
    await client.open(path)
    path.write_text("rewritten on disk\n")
    output = await read(client, path)
    assert "rewritten on disk" in output
    assert "as opened" not in output


async def test_opened_with_text_that_is_not_on_disk(client: WireClient, root: Path) -> None:
    path = root / "restored.txt"
    path.write_text("on disk\n")
    await client.open(path, text="restored unsaved work\n")
    assert "restored unsaved work" in await read(client, path)


async def test_close_drops_the_buffer(client: WireClient, root: Path) -> None:
    path = root / "closed.txt"
    path.write_text("disk\n")
    uri = await client.open(path)
    change(client, uri, 2, 0, "buffer ")
    assert "buffer disk" in await read(client, path)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    output = await read(client, path)
    assert "1: disk" in output and "buffer" not in output


async def test_an_uri_with_escapes_finds_its_buffer(client: WireClient, root: Path) -> None:
    path = root / "with space.txt"
    path.write_text("disk\n")
    uri = await client.open(path)
    assert "%20" in uri
    change(client, uri, 2, 0, "buffer ")
    assert "buffer disk" in await read(client, path)
