"""tools/list: shape, order and the model, config and client filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.wire.conftest import WireClient, connect, make_project
from tools.builtin import BUILTIN_ORDER

pytestmark = pytest.mark.asyncio(loop_scope="module")

KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}
GPT = {"providerID": "openai", "modelID": "gpt-5"}
CLAUDE = {"providerID": "anthropic", "modelID": "claude-sonnet-4"}
EDIT_FAMILY = {"edit", "write", "multiedit"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("list"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(root: Path):
    async with connect(root) as client:
        yield client


def walk(node: Any):
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


async def test_every_entry_has_the_documented_shape(client: WireClient) -> None:
    tools = (await client.call("tools/list", {}))["tools"]
    assert tools
    for tool in tools:
        assert set(tool) == {"id", "description", "parameters", "kind", "annotations"}, tool["id"]
        assert tool["description"].strip()
        assert tool["kind"] in KINDS
        assert set(tool["annotations"]) == {
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        }
        schema = tool["parameters"]
        assert schema["type"] == "object"
        assert isinstance(schema["required"], list)
        for node in walk(schema):
            if isinstance(node, dict):
                assert not {"$ref", "$defs", "title"} & set(node), (tool["id"], node)
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool["id"], name)


async def test_order_is_builtin_order_and_invalid_is_never_listed(client: WireClient) -> None:
    ids = await client.tool_ids()
    assert "invalid" not in ids
    assert len(ids) == len(set(ids))
    assert ids == [tool_id for tool_id in BUILTIN_ORDER if tool_id in ids]
    assert {"read", "glob", "grep", "list"} <= set(ids)
    assert ids == await client.tool_ids(), "the order is stable"


async def test_gpt_gets_apply_patch_instead_of_the_edit_family(client: WireClient) -> None:
    ids = await client.tool_ids(model=GPT)
    assert not EDIT_FAMILY & set(ids)
    assert "read" in ids


async def test_claude_gets_the_edit_family(client: WireClient) -> None:
    ids = await client.tool_ids(model=CLAUDE)
    assert set(ids) >= EDIT_FAMILY
    assert "apply_patch" not in ids


async def test_the_model_filter_decides_what_is_offered_not_what_runs(
    client: WireClient, root: Path
) -> None:
    result = await client.execute(
        "write", {"filePath": str(root / "made-by-gpt.txt"), "content": "hi\n"}, model=GPT
    )
    assert not result["isError"], result["output"]
    assert (root / "made-by-gpt.txt").read_text() == "hi\n"


async def test_initialize_model_is_the_default_and_a_call_overrides_it(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    async with connect(root, options={"model": GPT}) as client:
        assert "edit" not in await client.tool_ids()
        assert "edit" in await client.tool_ids(model=CLAUDE)


async def test_config_disables_a_tool_for_list_and_execute(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    async with connect(root, options={"config": {"tools": {"grep": False}}}) as client:
        assert "grep" not in await client.tool_ids()
        result = await client.execute("grep", {"pattern": "alpha"})
        assert result["isError"]
        assert result["metadata"]["error"] == "permission_denied"
        assert '"grep": false' in result["output"]
        assert client.messages == []
