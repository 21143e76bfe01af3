"""Python custom tools: import a file by path, name its tools, run them.

Each tool folder becomes a private package (``_toolhost_custom_<hash>``) whose
``__path__`` is the folder, so a tool file can import a sibling with
``from . import helper`` while the folder is never put on ``sys.path`` (where it
could shadow installed packages). A file that does not import ``tools`` is a helper
script (e.g. the one behind a wrapper) and is skipped without running it.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import logging
import re
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tools.context import ToolContext
from tools.custom.api import CustomContext, ToolSpec, is_async
from tools.custom.naming import LoadError, Named, check_id, tool_id
from tools.result import ToolResult
from tools.tool import Tool, coerce_result, define

log = logging.getLogger("toolhost.custom")

# How long a cancelled tool may take to stop before its call is answered anyway.
ABORT_GRACE_SECONDS = 2.0

_import_lock = threading.Lock()


def package_name(folder: Path) -> str:
    return "_toolhost_custom_" + hashlib.sha1(str(folder).encode()).hexdigest()[:12]


def forget_folder(folder: Path) -> None:
    """Drop a folder's modules so the next load imports fresh code."""
    package = package_name(folder)
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def defines_tools(tree: ast.Module) -> bool:
    """Whether a file imports toolhost's ``tools`` (or a sibling), i.e. may define a tool."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level > 0 or module == "tools" or module.startswith("tools."):
                return True
        elif isinstance(node, ast.Import) and any(
            a.name == "tools" or a.name.startswith("tools.") for a in node.names
        ):
            return True
    return False


def load_file(path: Path) -> list[Named]:
    """The tools ``path`` defines (``[]`` for a helper script); ``LoadError`` if broken."""
    try:
        source = path.read_bytes()
    except OSError as error:
        raise LoadError(f"cannot read the file ({error.strerror or error})") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as error:
        raise LoadError(f"syntax error at line {error.lineno}: {error.msg}") from None
    except ValueError as error:  # e.g. null bytes
        raise LoadError(f"not a Python source file ({error})") from None
    if not defines_tools(tree):
        return []
    module = _execute(path, tree)
    return tools_in(module, path.stem, str(path))


def _execute(path: Path, tree: ast.Module) -> types.ModuleType:
    folder = path.parent
    package = _ensure_package(folder)
    name = f"{package}.{_module_name(path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _quiet_imports():
            exec(compile(tree, str(path), "exec"), module.__dict__)
    except (Exception, SystemExit) as error:
        del sys.modules[name]
        raise LoadError(_describe_failure(error, path)) from None
    return module


def _ensure_package(folder: Path) -> str:
    package = package_name(folder)
    if package not in sys.modules:
        module = types.ModuleType(package, f"toolhost custom tools in {folder}")
        module.__path__ = [str(folder)]
        module.__package__ = package
        sys.modules[package] = module
    return package


def _module_name(stem: str) -> str:
    name = re.sub(r"\W", "_", stem)
    return f"_{name}" if name[:1].isdigit() or not name else name


@contextlib.contextmanager
def _quiet_imports() -> Iterator[None]:
    """No ``__pycache__`` litter in the user's tool folders (relative imports write it)."""
    with _import_lock:
        previous = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            yield
        finally:
            sys.dont_write_bytecode = previous


def _describe_failure(error: BaseException, path: Path) -> str:
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    if frames:
        text += f" (line {frames[-1].lineno})"
    return text


def tools_in(module: types.ModuleType, stem: str, source: str) -> list[Named]:
    """Module-level ``tool(...)`` results (and ``define`` tools), by the naming rule.

    Names starting with ``_`` are private and ignored.
    """
    found: list[Named] = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, ToolSpec):
            new_id = tool_id(stem, name)
            check_id(new_id)
            found.append(Named(new_id, from_spec(new_id, value, source)))
        elif (
            isinstance(value, Tool)
            and getattr(value.execute, "__module__", None) == module.__name__
        ):
            found.append(Named(value.id, value))
    return found


def from_spec(new_id: str, spec: ToolSpec, source: str) -> Tool:
    """The ``Tool`` for a ``tool(...)`` definition (its schema is built here, once)."""

    async def execute(args: Any, ctx: ToolContext) -> ToolResult:
        produced = await run_execute(spec.execute, args, ctx)
        return coerce_result(produced, new_id)

    execute.__qualname__ = f"custom tool {new_id} ({source})"
    return define(new_id, parameters=spec.parameters, execute=execute, description=spec.description)


async def run_execute(fn: Callable[..., Any], args: Any, ctx: ToolContext) -> Any:
    """Run a tool's ``execute``; on cancellation, abort it and wait a little for it to stop.

    A sync ``execute`` runs in a daemon thread: it cannot be interrupted, only told
    (``ctx.abort``), and a thread that never returns must not hold up shutdown.
    """
    loop = asyncio.get_running_loop()
    facade = CustomContext(ctx, loop)
    task = asyncio.ensure_future(
        _await_result(fn(args, facade)) if is_async(fn) else _in_thread(loop, fn, args, facade)
    )
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        ctx.abort.abort()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=ABORT_GRACE_SECONDS)
        if not done:
            log.warning(
                "custom tool %s did not stop within %.0f s of being cancelled; left running",
                ctx.tool,
                ABORT_GRACE_SECONDS,
            )
        elif not task.cancelled() and task.exception() is not None:
            log.debug("custom tool %s failed while stopping", ctx.tool, exc_info=task.exception())
        raise


async def _await_result(value: Any) -> Any:
    while asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        value = await value
    return value


async def _in_thread(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> Any:
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            value = fn(*args)
        except BaseException as error:  # handed to the awaiting call, not lost in the thread
            outcome: tuple[bool, Any] = (False, error)
        else:
            outcome = (True, value)
        with contextlib.suppress(RuntimeError):  # the loop may be gone by now
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="toolhost-custom-tool", daemon=True).start()
    return await _await_result(await future)
