"""Shared benchmark helpers: a tiny LSP-framed JSON-RPC client, stats, table rows.

The client is deliberately small and direct (one reader task, one future per
request) and is used unchanged for our server and for every baseline, so its own
overhead cancels out of the ratios.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
# The interpreter running the benchmarks is the one every server is started with.
PYTHON = sys.executable
TOOLHOST = VENV_BIN / "toolhost"
# The console script is installed before server/ is written, so wait for both.

now = time.perf_counter
# Generous: no single call here should take more than a second or two.
CALL_TIMEOUT = 60.0


# --------------------------------------------------------------------------
# JSON-RPC over a subprocess's stdio
# --------------------------------------------------------------------------


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class ServerDied(Exception):
    pass


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_frame(stream: asyncio.StreamReader) -> Any:
    """The next LSP-framed message, or None at the end of the stream."""
    length = -1
    while True:
        line = await stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(await stream.readexactly(length))


class RpcClient:
    """One subprocess spoken to over stdio with LSP base framing."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr: IO[bytes]) -> None:
        self.proc = proc
        self._stderr = stderr
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.notifications = 0
        self._reader = asyncio.create_task(self._read_loop())

    @classmethod
    async def spawn(
        cls, argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> RpcClient:
        # stderr goes to a file, not a pipe: a chatty server must never block on it,
        # and its tail explains a failed start.
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=env,
        )
        return cls(proc, stderr)

    def stderr_tail(self, limit: int = 2000) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-limit:]

    async def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while (message := await read_frame(stdout)) is not None:
                self._dispatch(message)
            raise ServerDied("server closed its stdout")
        except (ServerDied, asyncio.IncompleteReadError, ConnectionError) as error:
            died = ServerDied(f"{error}; stderr:\n{self.stderr_tail()}")
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(died)
            self._pending.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self._pending.pop(message["id"], None)
            if future is None or future.done():
                return
            if "error" in message:
                future.set_exception(RpcError(message["error"]))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:
            # A server-to-client request (e.g. registerCapability): answer null, as a
            # plain client does, so the server never waits on us.
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
        else:
            self.notifications += 1

    def _write(self, message: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(frame(message))

    async def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """The result; ``timeout`` turns a hung server into an error that shows its stderr.

        Hot loops pass no timeout (a timer per call would be measured too) and sit
        inside one ``deadline`` instead.
        """
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        self._write({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        await self.proc.stdin.drain()  # type: ignore[union-attr]
        if timeout is None:
            return await future
        async with self.deadline(timeout, method):
            return await future

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float, what: str) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(seconds):
                yield
        except TimeoutError:
            raise ServerDied(
                f"no answer to {what} within {seconds:.0f} s; stderr:\n{self.stderr_tail()}"
            ) from None

    async def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})
        await self.proc.stdin.drain()  # type: ignore[union-attr]

    async def initialize(self, root: Path) -> Any:
        result = await self.request("initialize", initialize_params(root), timeout=CALL_TIMEOUT)
        await self.notify("initialized", {})
        return result

    async def close(self, timeout: float = 5.0) -> None:
        """shutdown + exit, as an editor does; kill if the server lingers."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.request("shutdown"), timeout)
            await self.notify("exit")
        with contextlib.suppress(Exception):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        self._stderr.close()


def initialize_params(root: Path) -> dict[str, Any]:
    uri = root.resolve().as_uri()
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "toolhost-bench", "version": "1"},
        "rootUri": uri,
        "workspaceFolders": [{"uri": uri, "name": root.name}],
        "capabilities": {},
        "initializationOptions": {
            "sessionID": "ses_bench",
            # A benchmark repeats one call on purpose; the doom-loop check still runs,
            # its permission ask is answered by this rule instead of failing the call.
            "config": {"permission": {"doom_loop": "allow"}},
        },
    }


def server_env(scratch: Path) -> dict[str, str]:
    """The caller's environment, with the server's files kept under ``scratch``.

    Bytecode caching is switched on (into ``scratch``, never the repo) because an
    installed sidecar starts from cached .pyc files; with PYTHONDONTWRITEBYTECODE
    set, as in some CI shells, our own modules would be compiled from source on
    every spawn while pygls's came precompiled from its wheel.
    """
    env = {
        **os.environ,
        "TOOLHOST_DATA_DIR": str(scratch / "data"),
        "PYTHONPYCACHEPREFIX": str(scratch / "pycache"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def toolhost_argv() -> list[str]:
    """Started exactly as an editor starts it: the console script, ``serve``, stdio."""
    return [str(TOOLHOST), "serve"]


async def execute(client: RpcClient, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.request(
        "tools/execute", {"tool": tool, "args": args}, timeout=CALL_TIMEOUT
    )
    if result.get("isError"):
        raise RuntimeError(f"{tool} failed: {result.get('output')}")
    return result


# --------------------------------------------------------------------------
# Stats and the results table
# --------------------------------------------------------------------------


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


@dataclass
class Row:
    """One line of the results table.

    ``passed`` is None for informational rows (no target of their own).
    ``baseline_text`` overrides the baseline column (e.g. "> 30 s" for a timeout).
    """

    name: str
    ours: float
    baseline: float | None
    target: str
    passed: bool | None
    baseline_text: str | None = None
    note: str = ""
    unit: str = "s"  # "B": ours and baseline are bytes (storage), not seconds

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline <= 0:
            return None
        return self.ours / self.baseline

    def cells(self) -> list[str]:
        ratio = self.ratio
        if self.baseline_text is not None:
            base = self.baseline_text
            # A baseline that timed out is a lower bound, so the ratio is an upper one.
            ratio_text = f"< {ratio:.4f}x" if ratio is not None else "-"
        else:
            base = self._fmt(self.baseline) if self.baseline is not None else "-"
            ratio_text = f"{ratio:.2f}x" if ratio is not None else "-"
        status = {True: "PASS", False: "MISS", None: "info"}[self.passed]
        return [self.name, self._fmt(self.ours), base, ratio_text, self.target, status]

    def _fmt(self, value: float) -> str:
        if self.unit == "B":
            return f"{value / 1e3:.1f} kB" if value < 1e6 else f"{value / 1e6:.1f} MB"
        return fmt_time(value)


HEADERS = ["benchmark", "ours", "baseline", "ratio", "target", "result"]


def render_table(rows: Sequence[Row], *, markdown: bool = False) -> str:
    cells = [r.cells() for r in rows]
    if markdown:
        lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
    else:
        widths = [max(len(r[i]) for r in [HEADERS, *cells]) for i in range(len(HEADERS))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    notes = [f"- {r.name}: {r.note}" for r in rows if r.note]
    return "\n".join(lines + (["", *notes] if notes else []))


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.release()}"
    )


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = now()
    value = fn()
    return now() - start, value
