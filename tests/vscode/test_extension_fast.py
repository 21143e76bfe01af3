"""The VS Code extension's fast tier: its client code under plain Node.

The bundled extension (``dist/extension.js``) runs under Node with a small stand-in
for the ``vscode`` module (``editors/vscode/test/fast/vscode-stub.js``, injected by a
require hook) and the real vscode-languageclient, against the real ``toolhost serve``.
Each ``editors/vscode/test/fast/*.test.js`` file is one test here; they cover every
request handler (permission/ask, workspace/applyEdit, editor/saveDocuments,
editor/openDocument, editor/diagnostics, editor/lsp, tools/update and $/progress),
the exported API, the commands, the Language Model Tools and Restricted Mode.
"""

from __future__ import annotations

import pytest

from tests.vscode.support import (
    EXTENSION,
    ensure_node_modules,
    node_env,
    output_of,
    require_node,
    run,
)

# A long file: started first, so that it does not end the parallel run (tests/README.md).
pytestmark = pytest.mark.early

FAST_TESTS = sorted((EXTENSION / "test" / "fast").glob("*.test.js"))


@pytest.fixture(scope="module")
def built() -> None:
    require_node()
    ensure_node_modules()
    done = run(["node", "scripts/build.mjs", "--tests"], EXTENSION, 120, node_env())
    assert done.returncode == 0, output_of(done)


@pytest.mark.parametrize("test_file", FAST_TESTS, ids=[p.name for p in FAST_TESTS])
def test_node_tier(built: None, test_file) -> None:
    done = run(
        ["node", "--require", "./test/fast/register.js", "--test", str(test_file)],
        EXTENSION,
        600,
        node_env(),
    )
    assert done.returncode == 0, output_of(done)
    assert "# fail 0" in done.stdout, output_of(done)
