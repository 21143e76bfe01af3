"""One case against one sandbox: first with no sandbox (the attack must work), then
under the sandbox, each in a world of its own.

Verdicts: ``held`` (no evidence), ``escaped`` (the evidence), ``skipped`` (this
machine or sandbox cannot run the case: why), ``broken`` (the attack did not work
with no sandbox, so the case proves nothing here), ``error``.  A control
(``expect = "allowed"``) is ``allowed`` or ``blocked`` instead.  A case that needs
the domain list under a sandbox that could not be given one is ``no domain list``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.security.escapes.corpus import Case
from tests.security.escapes.sandboxes import NoSandbox, Ran, Sandbox
from tests.security.escapes.world import World, missing


@dataclass(frozen=True)
class Attempt:
    evidence: str | None  # what shows the escape, None if nothing does
    ran: Ran


@dataclass(frozen=True)
class Verdict:
    case: Case
    sandbox: str
    result: str
    detail: str = ""

    @property
    def held(self) -> bool:
        return self.result in ("held", "allowed")


async def attempt(case: Case, sandbox: Sandbox, root: Path) -> Attempt:
    """Run the case once under ``sandbox`` in a fresh world at ``root``."""
    world = World(root, case).build()
    try:
        world.start()
        script = world.fill(case.attack)
        ran = await sandbox.run(world, script, timeout=case.timeout, abort_after=case.abort_after)
        if case.end:
            await sandbox.end()
        if case.after:
            world.shell(case.after, "after")
        return Attempt(world.proof(ran.output), ran)
    finally:
        world.stop()


def why_not(case: Case, sandbox: Sandbox | None = None) -> str | None:
    """Why ``case`` cannot run (under ``sandbox``) here; None: it can."""
    for need in case.needs:
        reason = missing(need)
        if reason:
            return reason
    return sandbox.unavailable() if sandbox is not None else None


async def baseline(case: Case, root: Path) -> Attempt:
    """The case with no sandbox, where the attack must work."""
    return await attempt(case, NoSandbox(), root / "none")


def broken(bare: Attempt) -> str | None:
    """Why the no-sandbox run proves nothing (None: it shows the escape)."""
    if bare.evidence is not None:
        return None
    return f"no escape with no sandbox: {bare.ran.output.strip()[-300:]}"


async def verdict(
    case: Case, sandbox: Sandbox, root: Path, *, bare: Attempt | None = None
) -> Verdict:
    """``case`` under ``sandbox``; ``bare``: its no-sandbox run, if made already."""
    name = sandbox.name
    reason = why_not(case, sandbox)
    if reason:
        return Verdict(case, name, "skipped", reason)
    if case.domains and not sandbox.domains:
        return Verdict(case, name, "no domain list", "this sandbox was not given the domain list")
    try:
        bare = bare or await baseline(case, root)
        if broken(bare):
            return Verdict(case, name, "broken", broken(bare) or "")
        tried = await attempt(case, sandbox, root / name)
    except (RuntimeError, OSError) as error:
        return Verdict(case, name, "error", str(error))
    if case.expect == "allowed":
        result = "allowed" if tried.evidence else "blocked"
        return Verdict(case, name, result, tried.ran.output.strip()[-300:])
    if tried.evidence:
        return Verdict(case, name, "escaped", tried.evidence)
    return Verdict(case, name, "held", tried.ran.output.strip()[-200:])
