"""The program that runs JS/TS custom tools: finding Bun or Node.js, installing with npm.

OpenCode runs custom tools on Bun, so toolhost does too: a ``bun`` on PATH first, else
the one toolhost installs into its data dir from npm (the ``bun`` package ships the
binary) on first need. Node.js 20.6+ is the fallback when Bun cannot be had; there
``Bun.*`` APIs fail with a clear message. ``TOOLHOST_JS_RUNTIME=node`` (or ``bun``)
chooses one; ``TOOLHOST_BUN`` names a Bun binary to use.

The packages a tool imports come from its folder's ``node_modules`` (OpenCode installs
a ``package.json`` there), else from a cache toolhost fills once with npm. The
``toolhost doctor`` check that reports the runtime lives here too.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tools.truncation import data_dir

log = logging.getLogger("toolhost.custom.node")

MIN_NODE = (20, 6)  # module.register, which the TypeScript loader needs
MIN_BUN = (1, 1)
BUN_PACKAGE = "bun@^1.4"  # 1.4.x: what OpenCode 1.18.33 itself is built on
NPM_TIMEOUT_SECONDS = 300.0
# What a tool may import without having it installed, plus what the host needs.
CACHE_PACKAGES = (
    "esbuild@^0.28.0",
    "@opencode-ai/plugin@^1",
    "zod@^4",
    "zod-to-json-schema@^3.24",
)


class NodeUnavailable(Exception):
    """No runtime can run JS/TS tools here; the message says why, for ``toolhost list``."""


@dataclass(frozen=True)
class Runtime:
    """The program that runs JS/TS tools: Bun as OpenCode does, else Node.js."""

    kind: Literal["bun", "node"]
    path: str
    version: str
    why_not_bun: str = ""  # set when Node.js serves: what kept Bun away

    def describe(self) -> str:
        name = "Bun" if self.kind == "bun" else "Node.js"
        text = f"{name} {self.version} ({self.path})"
        return text + (f"; not Bun: {self.why_not_bun}" if self.why_not_bun else "")


@functools.cache
def _version_of(program: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
        return tuple(int(part) for part in out.strip().lstrip("v").split("-")[0].split(".")[:3])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def _shown(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def bun_dir() -> Path:
    return data_dir() / "bun"


def _cached_bun(root: Path | None = None) -> str | None:
    """The Bun binary npm installed into ``root``, if it runs."""
    modules = (root or bun_dir()) / "node_modules"
    # The package's postinstall moves the binary to bun/bin/bun.exe; with scripts off it
    # stays in the platform package.
    candidates = [modules / "bun" / "bin" / "bun.exe", *modules.glob("@oven/bun-*/bin/bun")]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            version = _version_of(str(candidate))
            if version is not None and version >= MIN_BUN:
                return str(candidate)
    return None


def _bun_on_path() -> str | None:
    named = os.environ.get("TOOLHOST_BUN") or shutil.which("bun")
    if named is None:
        return None
    version = _version_of(named)
    return named if version is not None and version >= MIN_BUN else None


_bun_lock = threading.Lock()


def ensure_bun() -> str:
    """Install Bun from npm into toolhost's data dir once; its path, or ``NodeUnavailable``."""
    with _bun_lock:
        found = _cached_bun()
        if found is not None:
            return found
        target = bun_dir()
        _npm_install_into(target, [BUN_PACKAGE], what="Bun")
        found = _cached_bun(target)
        if found is None:
            raise NodeUnavailable(f"npm installed {BUN_PACKAGE}, but its binary does not run here")
        return found


def find_runtime(*, install: bool = True) -> Runtime:
    """Bun (on PATH, else toolhost's, installed now when ``install``), else Node.js."""
    forced = os.environ.get("TOOLHOST_JS_RUNTIME", "").strip().lower()
    if forced not in ("", "bun", "node"):
        raise NodeUnavailable(f"not loaded: TOOLHOST_JS_RUNTIME is {forced!r}; use bun or node")
    why_not = ""
    if forced != "node":
        bun = _bun_on_path() or _cached_bun()
        if bun is None and install:
            try:
                bun = ensure_bun()
            except NodeUnavailable as error:
                why_not = str(error)
        elif bun is None:
            why_not = "it is not installed yet"
        if bun is not None:
            return Runtime("bun", bun, _shown(_version_of(bun) or ()))
        if forced == "bun":
            raise NodeUnavailable(f"not loaded: TOOLHOST_JS_RUNTIME=bun, but {why_not}")
    else:
        why_not = "TOOLHOST_JS_RUNTIME=node chooses Node.js"
    try:
        node = find_node()
    except NodeUnavailable as error:
        if forced == "node":
            raise
        raise NodeUnavailable(
            "not loaded: JS/TS tools run on Bun, else Node.js 20.6+; Bun could not be had "
            f"({why_not}), and {str(error).removeprefix('not loaded: ')}"
        ) from None
    return Runtime("node", node, _shown(_version_of(node) or ()), why_not)


def find_node() -> str:
    """The ``node`` to use; ``NodeUnavailable`` when there is none (or it is too old)."""
    node = shutil.which("node")
    if node is None:
        raise NodeUnavailable("not loaded: no Node.js (20.6 or newer) was found on PATH")
    version = _version_of(node)
    if version is None:
        raise NodeUnavailable(f"not loaded: {node} --version failed")
    if version < MIN_NODE:
        shown = ".".join(map(str, version))
        raise NodeUnavailable(f"not loaded: Node.js {shown} is too old; JS/TS tools need 20.6+")
    return node


# -- the npm cache -------------------------------------------------------------------


def cache_dir() -> Path:
    return data_dir() / "node-cache"


def _package_dir(root: Path, spec: str) -> Path:
    name = spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
    return root / "node_modules" / name


def cache_ready(root: Path | None = None) -> bool:
    root = root or cache_dir()
    return all((_package_dir(root, p) / "package.json").is_file() for p in CACHE_PACKAGES)


def _resolvable(package: str, start: Path) -> bool:
    """Whether Node would find ``package`` from ``start`` (its node_modules walk)."""
    for folder in [start, *start.parents]:
        if (folder / "node_modules" / package / "package.json").is_file():
            return True
    return False


def needs_cache(files: list[Path], runtime: str = "node") -> bool:
    """Whether some file would miss a package only the cache can give it."""
    for path in files:
        transpile = path.suffix == ".ts" and runtime == "node"  # Bun runs TypeScript itself
        wanted = ["@opencode-ai/plugin", "zod"] + (["esbuild"] if transpile else [])
        if not all(_resolvable(package, path.parent) for package in wanted):
            return True
    return False


_install_lock = threading.Lock()


def ensure_cache() -> None:
    """Install ``CACHE_PACKAGES`` once; raises ``NodeUnavailable`` with npm's complaint."""
    with _install_lock:
        target = cache_dir()
        if cache_ready(target):
            return
        _npm_install_into(target, list(CACHE_PACKAGES), what="them", ready=cache_ready)


def _npm_install_into(target: Path, packages: list[str], *, what: str, ready: Any = None) -> None:
    """``npm install`` beside ``target``, then rename: a half-done install is never used."""
    npm = shutil.which("npm")
    if npm is None:
        raise NodeUnavailable(f"npm was not found on PATH to install {what}")
    staging = target.with_name(f".{target.name}-{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        (staging / "package.json").write_text(
            '{"name": "toolhost-node-cache", "private": true}\n', encoding="utf-8"
        )
        log.info("installing %s into %s", " ".join(packages), target)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0 or (ready is not None and not ready(staging)):
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise NodeUnavailable(f"npm install failed: {' '.join(tail) or done.returncode}")
        if target.exists():
            shutil.rmtree(target)  # an older, incomplete install
        staging.rename(target)
    except subprocess.TimeoutExpired:
        raise NodeUnavailable(f"npm install took longer than {NPM_TIMEOUT_SECONDS:.0f} s") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


# -- toolhost doctor ---------------------------------------------------------------------

DOCTOR_CHECK = "js-runtime"


def doctor_check() -> dict[str, Any]:
    """Which runtime serves JS/TS custom tools, as a ``toolhost doctor`` check.

    Installs nothing: a Bun that would be installed on first need is reported as such.
    """
    try:
        runtime = find_runtime(install=False)
    except NodeUnavailable as error:
        return {
            "name": DOCTOR_CHECK,
            "ok": False,
            "detail": str(error).removeprefix("not loaded: "),
        }
    if runtime.kind == "bun":
        summary = f"Bun {runtime.version}"
        detail = f"Bun {runtime.version} ({runtime.path}) runs JS/TS custom tools, as in OpenCode"
    elif shutil.which("npm") is not None and os.environ.get("TOOLHOST_JS_RUNTIME") != "node":
        summary = "Bun (installed on first need)"
        detail = (
            f"Bun is installed from npm into {bun_dir()} when a JS/TS tool first loads; "
            f"until then, and if that fails, Node.js {runtime.version} ({runtime.path}) runs "
            "them, where Bun.* APIs fail"
        )
    else:
        summary = f"Node.js {runtime.version} (no Bun)"
        detail = (
            f"Node.js {runtime.version} ({runtime.path}) runs JS/TS custom tools, so Bun.* APIs "
            f"fail ({runtime.why_not_bun}); put bun on PATH to run them as OpenCode does"
        )
    return {"name": DOCTOR_CHECK, "ok": True, "detail": detail, "summary": summary}
