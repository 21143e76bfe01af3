"""toolhost's column of the escape corpus: every case first escapes with no sandbox,
then is held by toolhost's bash tool (in-process, as the other security tests run it).

The no-sandbox runs of all cases go first, several at a time (they only wait on
processes and sockets); then each case runs under toolhost, one at a time.  A case
whose ``known`` names toolhost is expected to escape (strict: the test fails once it
is held, so the note stays true).  A case that needs the domain list is skipped while
this checkout's ``sandbox.network`` takes no list (network by domain, issue 27).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest

from tests.security.escapes import corpus, runner
from tests.security.escapes.sandboxes import Toolhost

CASES = corpus.load()
TOOLHOST = Toolhost()
PARALLEL = 8


def _param(case: corpus.Case) -> Any:
    known = case.known.get("toolhost")
    marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, runner.Attempt | Exception]:
    """Every runnable case with no sandbox, by id."""
    base = tmp_path_factory.mktemp("escapes-none")
    runnable = [c for c in CASES if runner.why_not(c) is None]

    def one(case: corpus.Case) -> runner.Attempt | Exception:
        try:
            return asyncio.run(runner.baseline(case, base / case.id))
        except (RuntimeError, OSError) as error:
            return error

    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        return dict(zip((c.id for c in runnable), pool.map(one, runnable), strict=True))


def test_the_corpus_covers_every_class() -> None:
    assert len(CASES) >= 60
    for klass in corpus.CLASSES:
        assert sum(c.klass == klass for c in CASES) >= 6, klass


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
async def test_toolhost_holds(
    case: corpus.Case, baselines: dict[str, runner.Attempt | Exception], tmp_path: Path
) -> None:
    reason = runner.why_not(case, TOOLHOST)
    if reason:
        pytest.skip(reason)
    if case.domains and not TOOLHOST.domains:
        pytest.skip("needs sandbox.network {allow: [...]} (network by domain, issue 27)")
    bare = baselines[case.id]
    if isinstance(bare, Exception):
        raise bare
    assert bare.evidence, f"the attack does not work with no sandbox: {bare.ran.output}"
    tried = await runner.attempt(case, TOOLHOST, tmp_path)
    if case.expect == "allowed":
        assert tried.evidence, f"blocked: {tried.ran.output}"
    else:
        assert tried.evidence is None, f"{tried.evidence}\n{tried.ran.output}"
