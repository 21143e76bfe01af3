"""tools/execute of the file tools over the wire, and the error kinds that need no prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_asyncio

from tests.wire.conftest import WireClient, connect, make_project

pytestmark = pytest.mark.asyncio(loop_scope="module")

RESULT_KEYS = {"title", "output", "metadata", "attachments", "isError"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("execute"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root, options={"sessionID": "ses_wire"}) as client:
        yield client


def ok(result: dict) -> dict:
    assert set(result) == RESULT_KEYS
    assert result["isError"] is False, result["output"]
    return result


def failed(result: dict, kind: str) -> dict:
    assert set(result) == RESULT_KEYS
    assert result["isError"] is True
    assert result["metadata"]["error"] == kind, result
    return result


async def test_read(client: WireClient, root: Path) -> None:
    result = ok(await client.execute("read", {"filePath": str(root / "notes.txt")}))
    assert result["title"] == "notes.txt"
    assert "1: alpha\n2: beta\n3: gamma" in result["output"]
    assert result["attachments"] == []


async def test_a_case_mismatched_id_runs_the_real_tool(client: WireClient) -> None:
    result = ok(await client.execute("Read", {"filePath": "notes.txt"}))
    assert "2: beta" in result["output"]


async def test_write_creates_the_file_and_describes_the_change(
    client: WireClient, root: Path
) -> None:
    target = root / "out" / "new.txt"
    result = ok(await client.execute("write", {"filePath": str(target), "content": "one\ntwo\n"}))
    assert target.read_text() == "one\ntwo\n"
    metadata = result["metadata"]
    assert "+++ b/out/new.txt" in metadata["diff"]
    assert metadata["filediff"] == [{"file": "out/new.txt", "additions": 2, "deletions": 0}]
    assert metadata["edit"]["documentChanges"]


async def test_edit_after_read_in_the_same_session(client: WireClient, root: Path) -> None:
    target = root / "edit-me.txt"
    target.write_text("keep\nold line\nkeep\n")
    ok(await client.execute("read", {"filePath": str(target)}))
    result = ok(
        await client.execute(
            "edit", {"filePath": str(target), "oldString": "old line", "newString": "new line"}
        )
    )
    assert target.read_text() == "keep\nnew line\nkeep\n"
    assert "-old line\n+new line" in result["metadata"]["diff"]


async def test_edit_without_a_read_is_refused(client: WireClient, root: Path) -> None:
    target = root / "unread.txt"
    target.write_text("text\n")
    result = failed(
        await client.execute(
            "edit", {"filePath": str(target), "oldString": "text", "newString": "other"}
        ),
        "failed",
    )
    assert "read" in result["output"].lower()
    assert target.read_text() == "text\n"


async def test_sessions_are_separate(client: WireClient, root: Path) -> None:
    target = root / "per-session.txt"
    target.write_text("a\n")
    ok(await client.execute("read", {"filePath": str(target)}, sessionID="ses_reader"))
    args = {"filePath": str(target), "oldString": "a", "newString": "b"}
    failed(await client.execute("edit", args, sessionID="ses_other"), "failed")
    ok(await client.execute("edit", args, sessionID="ses_reader"))
    assert target.read_text() == "b\n"


async def test_multiedit_applies_every_edit(client: WireClient, root: Path) -> None:
    target = root / "multi.txt"
    target.write_text("one\ntwo\nthree\n")
    ok(await client.execute("read", {"filePath": str(target)}))
    edits = [{"oldString": "one", "newString": "1"}, {"oldString": "three", "newString": "3"}]
    ok(await client.execute("multiedit", {"filePath": str(target), "edits": edits}))
    assert target.read_text() == "1\ntwo\n3\n"


async def test_glob(client: WireClient, root: Path) -> None:
    result = ok(await client.execute("glob", {"pattern": "**/*.py"}))
    lines = set(result["output"].splitlines())
    assert {str(root / "src/pkg/core.py"), str(root / "src/pkg/util.py")} <= lines


async def test_grep(client: WireClient, root: Path) -> None:
    result = ok(await client.execute("grep", {"pattern": "TODO", "path": str(root / "src")}))
    assert str(root / "src/pkg/util.py") in result["output"]
    assert "core.py" not in result["output"]


async def test_list(client: WireClient) -> None:
    result = ok(await client.execute("list", {"path": "src"}))
    assert "pkg/" in result["output"]
    assert "core.py" in result["output"]


async def test_unknown_tool(client: WireClient) -> None:
    result = failed(await client.execute("frobnicate", {}), "unknown_tool")
    assert "frobnicate" in result["output"]
    assert "read" in result["output"]  # it lists what is available


async def test_invalid_arguments_name_the_field(client: WireClient) -> None:
    result = failed(await client.execute("read", {"filePath": 7}), "invalid_arguments")
    assert "filePath" in result["output"]
    assert "rewrite the input" in result["output"]


async def test_not_found(client: WireClient, root: Path) -> None:
    result = failed(await client.execute("read", {"filePath": "nope.txt"}), "not_found")
    assert "nope.txt" in result["output"]


async def test_failed(client: WireClient, root: Path) -> None:
    target = root / "no-match.txt"
    target.write_text("content\n")
    ok(await client.execute("read", {"filePath": str(target)}))
    args = {"filePath": str(target), "oldString": "absent", "newString": "x"}
    result = failed(await client.execute("edit", args), "failed")
    assert "oldString" in result["output"]
    assert target.read_text() == "content\n"


async def test_headless_fallback_rejects_and_says_how_to_allow(client: WireClient) -> None:
    # The client declared neither permissionAsk nor window.showMessage: nobody to ask.
    result = failed(await client.execute("read", {"filePath": ".env"}), "permission_rejected")
    assert "opencode.json" in result["output"]
    assert "TOKEN" not in result["output"]
    assert client.asks == [] and client.prompts == []


async def test_work_done_progress(client: WireClient) -> None:
    token = "progress-1"
    client.progress_reports.setdefault(token, [])  # as if the client had created it
    ok(await client.execute("read", {"filePath": "notes.txt"}, workDoneToken=token))
    # The end report is written before the response, on the same stream.
    kinds = [report.kind for report in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end"


async def test_32_concurrent_calls_are_all_answered(client: WireClient, root: Path) -> None:
    for i in range(32):
        (root / "many" / f"f{i}.txt").parent.mkdir(exist_ok=True)
        (root / "many" / f"f{i}.txt").write_text(f"content number {i}\n")
    results = await asyncio.gather(
        *(client.execute("read", {"filePath": f"many/f{i}.txt"}) for i in range(32))
    )
    for i, result in enumerate(results):
        ok(result)
        assert f"1: content number {i}\n" in result["output"]
