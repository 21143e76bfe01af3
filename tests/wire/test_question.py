"""``question`` over the wire: ``editor/question`` asked, answered, dismissed, withdrawn,
and not listed for a client that does not answer it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

import tests.wire.conftest as wire
from tests.wire.conftest import WireClient, connect, make_project

module_loop = pytest.mark.asyncio(loop_scope="module")
SECONDS = 10

QUESTIONS = [
    {
        "header": "Database",
        "question": "Which database should the service use?",
        "options": [
            {"label": "Postgres (Recommended)", "description": "What the other services use"},
            {"label": "SQLite", "description": "One file, no server"},
        ],
    },
    {
        "header": "Extras",
        "question": "Which extras should be set up?",
        "options": [
            {"label": "Migrations", "description": "Alembic"},
            {"label": "Seed data", "description": "A few rows to start with"},
            {"label": "Backups", "description": "Nightly dumps"},
        ],
        "multiple": True,
    },
]


class AnsweringClient(WireClient):
    """Answers ``editor/question`` with ``answer`` (None: never; the call is withdrawn)."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[dict[str, Any]] = []
        self.answer: Any = {"answers": [["SQLite"], ["Migrations", "Backups"]]}
        self.release = asyncio.Event()

        @self.feature("editor/question")
        async def question(ls: AnsweringClient, params: dict[str, Any]) -> Any:
            ls.questions.append(params)
            if ls.answer is None:  # never answers (until the test is over)
                await ls.release.wait()
            return ls.answer


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("question")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg"))
        patch.delenv("OPENCODE_CONFIG_DIR", raising=False)
        yield make_project(base)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path) -> AsyncIterator[AnsweringClient]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wire, "WireClient", AnsweringClient)
        async with connect(root, options={"editor": {"question": True}}) as client:
            assert isinstance(client, AnsweringClient)
            yield client


@module_loop
async def test_listed_for_a_client_that_answers_it(client: AnsweringClient) -> None:
    tools = (await client.call("tools/list", {}))["tools"]
    assert tools[0]["id"] == "question"  # first, as in OpenCode 1.18.33
    question = tools[0]
    assert question["description"].startswith("Use this tool when you need to ask the user")
    item = question["parameters"]["properties"]["questions"]["items"]
    assert item["required"] == ["question", "header", "options"]
    assert set(item["properties"]) == {"question", "header", "options", "multiple"}
    # Agents whose rules deny question do not see it (OpenCode's default denies it;
    # build and plan allow it).
    assert "question" in await client.tool_ids(agent="plan")
    assert "question" not in await client.tool_ids(agent="explore")


@module_loop
async def test_single_and_multiple_answers(client: AnsweringClient) -> None:
    client.answer = {"answers": [["SQLite"], ["Migrations", "Backups"]]}
    result = await client.execute("question", {"questions": QUESTIONS}, callID="call_q")
    assert result["isError"] is False, result["output"]
    asked = client.questions[-1]
    assert asked["callID"] == "call_q" and asked["sessionID"]
    assert [q["header"] for q in asked["questions"]] == ["Database", "Extras"]
    assert [q.get("multiple") for q in asked["questions"]] == [None, True]
    assert all(q["custom"] is True for q in asked["questions"])  # typing an answer is allowed
    assert asked["questions"][0]["options"][1] == {
        "label": "SQLite",
        "description": "One file, no server",
    }
    assert result["title"] == "Asked 2 questions"
    assert result["metadata"]["answers"] == [["SQLite"], ["Migrations", "Backups"]]
    assert result["output"] == (
        'User has answered your questions: "Which database should the service use?"="SQLite", '
        '"Which extras should be set up?"="Migrations, Backups". You can now continue with '
        "the user's answers in mind."
    )


@module_loop
async def test_a_typed_answer_and_an_unanswered_question(client: AnsweringClient) -> None:
    client.answer = {"answers": [["MariaDB, because ops runs it"], []]}
    result = await client.execute("question", {"questions": QUESTIONS})
    assert '"MariaDB, because ops runs it"' in result["output"]
    assert '"Which extras should be set up?"="Unanswered"' in result["output"]
    single = await client.execute("question", {"questions": QUESTIONS[:1]})
    assert single["title"] == "Asked 1 question"


@module_loop
async def test_dismissed_is_a_rejection(client: AnsweringClient) -> None:
    client.answer = {"dismissed": True}
    result = await client.execute("question", {"questions": QUESTIONS})
    assert result["isError"] is True
    assert result["metadata"]["error"] == "permission_rejected"
    assert result["output"] == "The user dismissed this question"


@module_loop
async def test_a_bad_answer_is_reported(client: AnsweringClient) -> None:
    client.answer = {"answers": "SQLite"}
    result = await client.execute("question", {"questions": QUESTIONS}, sessionID="ses_bad")
    assert result["isError"] is True
    assert "one list of labels per question" in result["output"]


@module_loop
async def test_cancel_withdraws_the_prompt(client: AnsweringClient) -> None:
    client.answer = None
    before = len(client.questions)
    pending = client.protocol.send_request(
        "tools/execute",
        {"tool": "question", "args": {"questions": QUESTIONS}, "sessionID": "ses_cancel"},
        msg_id="q-cancel",
    )
    async with asyncio.timeout(SECONDS):
        while len(client.questions) == before:
            await asyncio.sleep(0.02)
    withdrawn = client.protocol.wait_for_notification("$/cancelRequest")
    named = client.protocol.wait_for_notification("editor/withdrawn")
    client.cancel_request(types.CancelParams(id="q-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(pending), SECONDS)
    params = await asyncio.wait_for(asyncio.wrap_future(withdrawn), SECONDS)
    assert str(params.id).startswith("toolhost-")  # the server's own editor/question
    which = await asyncio.wait_for(asyncio.wrap_future(named), SECONDS)
    assert which == {"method": "editor/question", "id": client.questions[-1]["id"]}
    client.release.set()


@module_loop
async def test_not_listed_for_a_client_that_does_not_answer_it(root: Path) -> None:
    async with connect(root, options={"editor": {"permissionAsk": True}}) as plain:
        assert "question" not in await plain.tool_ids()
        # Called anyway: it says why it cannot ask.
        result = await plain.execute("question", {"questions": QUESTIONS})
        assert result["isError"] is True
        assert "cannot show questions" in result["output"]
