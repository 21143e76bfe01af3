"""What the kernel sandbox adds to a bash call: the same call with and without it.

Four sidecars on the same project (a git repository, so its protected paths are
re-bound read-only), started the same way and initialized alike but for
``sandbox``: ``mode: off``, the default (Landlock plus a user and mount
namespace), ``network: deny`` (a network namespace too), and the domain lists
(``network: {allow: [...]}``: a network namespace whose only way out is the
sidecar's proxy, ``tools.network``). Each runs ``bash`` with ``true`` through
``tools/execute``; they take turns in blocks, so drift on the machine hits all of
them. Every sandboxed result is checked to have been sandboxed
(``metadata.sandbox``), the off one not. Targets: from issue 11, at most 15 ms added
per call; from issue 27, the domain lists add at most 5 ms to a command that makes no
connection (against the default sandbox, whose network is open).

Then a 10 MB download from a loopback HTTP server with curl, through the proxy (the
domain lists, the server's name mapped to 127.0.0.1 by ``TOOLHOST_NETWORK_HOSTS`` and
its address listed literally) against the same download with the network open, the
two alternating call by call. Judged on curl's own ``time_total`` (the download as the
client sees it: the proxy's CONNECT-free plain HTTP forwarding, its name lookup and
its copy); the whole bash call is printed beside it. Target from issue 27: at most 10%
added. A third download, alternating with those two, goes through a bare forwarder
(``bare_forwarder``: accept, connect, ``splice`` both ways, no parsing and no checks) on
the open network: the floor any userspace proxy on this machine reaches, printed as an
info row beside the target's.

Last, what the guard on new repositories costs (``tools/bash/sandbox/creations.py``:
every new name in the project is made by the supervisor): a command that unpacks a
tree of small files into the project (``tar -x``, like a package install), against
the same command with the guard taken away (``TOOLHOST_SANDBOX_SIMULATE=no-repo-guard``),
alternating call by call. Target: at most 2x the time of the unguarded command.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _common import (
    CALL_TIMEOUT,
    Row,
    RpcClient,
    execute,
    fmt_time,
    initialize_params,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)

TARGET_MS = 15.0
DOMAINS_TARGET_MS = 5.0
DOWNLOAD_TARGET = 1.10
DOWNLOAD_BYTES = 10 * 1024 * 1024
BLOCKS = 10
DOMAINS = {"network": {"allow": ["pypi.test"]}}
SETUPS: dict[str, dict[str, Any]] = {
    "off": {"mode": "off"},
    "sandboxed": {},
    "network deny": {"network": "deny"},
    "network domains": DOMAINS,
}
NAME = "big.test"
TREE_FILES = 2000  # in 100 folders
TREE_TARGET = 2.0


async def start(
    root: Path, scratch: Path, sandbox: dict[str, Any], env: dict[str, str] | None = None
) -> RpcClient:
    client = await RpcClient.spawn(
        toolhost_argv(), cwd=root, env={**server_env(scratch), **(env or {})}
    )
    params = initialize_params(root)
    params["initializationOptions"]["config"]["sandbox"] = sandbox
    await client.request("initialize", params, timeout=CALL_TIMEOUT)
    await client.notify("initialized", {})
    return client


async def call(client: RpcClient, expect: str) -> float:
    start_time = now()
    result = await execute(client, "bash", {"command": "true", "description": "Run true"})
    took = now() - start_time
    sandbox = result["metadata"]["sandbox"]
    assert result["metadata"]["exit"] == 0, result
    assert sandbox["engine"] == expect, sandbox
    return took


async def run(quick: bool) -> list[Row]:
    rows = await no_connection(quick)
    rows += await download(quick)
    rows += await many_files(quick)
    return rows


async def no_connection(quick: bool) -> list[Row]:
    calls = 60 if quick else 300
    samples: dict[str, list[float]] = {name: [] for name in SETUPS}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        clients = {name: await start(root, Path(tmp), s) for name, s in SETUPS.items()}
        try:
            engines = {name: "landlock" for name in SETUPS} | {"off": "none"}
            for name, client in clients.items():  # warm-up: the supervisor, the caches
                for _ in range(10):
                    await call(client, engines[name])
            for _ in range(BLOCKS):
                for name, client in clients.items():
                    for _ in range(calls // BLOCKS):
                        samples[name].append(await call(client, engines[name]))
        finally:
            for client in clients.values():
                await client.close()
    off = median(samples["off"])
    rows = []
    for name in ("sandboxed", "network deny", "network domains"):
        ours = median(samples[name])
        added = ours - off
        log(f"sandbox cost: {name} {fmt_time(ours)}, off {fmt_time(off)}")
        rows.append(
            Row(
                f"bash `true`, {name}",
                ours,
                off,
                f"adds ≤ {TARGET_MS:g} ms",
                added * 1000 <= TARGET_MS,
                note=f"median of {calls}; adds {fmt_time(added)} to the same call with "
                "sandbox.mode off, same run",
            )
        )
    base, ours = median(samples["sandboxed"]), median(samples["network domains"])
    rows.append(
        Row(
            "bash `true`, network domains vs open network",
            ours,
            base,
            f"adds ≤ {DOMAINS_TARGET_MS:g} ms",
            (ours - base) * 1000 <= DOMAINS_TARGET_MS,
            note=f"median of {calls}; adds {fmt_time(ours - base)} to the default sandbox "
            "(network open), same run",
        )
    )
    return rows


class _Big(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b"x" * DOWNLOAD_BYTES

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def big_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _splice_to_end(source: socket.socket, target: socket.socket) -> None:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # the default pipe size is slower, not wrong
        fcntl.fcntl(write_end, 1031, 1024 * 1024)  # F_SETPIPE_SZ, as the proxy's relay
    try:
        while moved := os.splice(source.fileno(), write_end, 1024 * 1024):
            while moved:
                moved -= os.splice(read_end, target.fileno(), moved)
    except OSError:
        pass
    finally:
        os.close(read_end)
        os.close(write_end)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def bare_forwarder(port: int) -> Iterator[int]:
    """A loopback port forwarded to ``port`` with nothing but ``splice`` (a thread per
    connection, no parsing, no checks): what the second loopback crossing alone costs
    (a relay in C doing the same measured the same)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def forward(client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", port)) as upstream:
            out = threading.Thread(target=_splice_to_end, args=(client, upstream))
            out.start()
            _splice_to_end(upstream, client)
            out.join()

    def accept() -> None:
        with contextlib.suppress(OSError):  # the listener was closed
            while True:
                client, _ = listener.accept()
                threading.Thread(target=forward, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()


async def fetch(client: RpcClient, url: str) -> tuple[float, float, float]:
    """(curl's own time_total, its time to the first byte, the whole bash call) for one
    download of ``url``."""
    command = (
        "curl -sS -o /dev/null -w '%{size_download} %{time_total} %{time_starttransfer}' " + url
    )
    start_time = now()
    result = await execute(client, "bash", {"command": command, "description": "Download"})
    took = now() - start_time
    size, total, first = result["output"].split()[:3]
    assert int(size) == DOWNLOAD_BYTES, result["output"]
    return float(total), float(first), took


async def download(quick: bool) -> list[Row]:
    calls = 10 if quick else 40
    ways = ("open", "proxy", "floor")
    curl_times: dict[str, list[float]] = {way: [] for way in ways}
    first_bytes: dict[str, list[float]] = {way: [] for way in ways}
    call_times: dict[str, list[float]] = {way: [] for way in ways}
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-download-"))
        port = stack.enter_context(big_server())
        bare = stack.enter_context(bare_forwarder(port))
        root = Path(tmp) / "project"
        root.mkdir()
        lists = {"network": {"allow": [NAME, f"127.0.0.1:{port}"]}}
        names = {"TOOLHOST_NETWORK_HOSTS": f"{NAME}=127.0.0.1"}
        opened = await start(root, Path(tmp), {})
        clients = {
            "open": opened,
            "proxy": await start(root, Path(tmp), lists, names),
            "floor": opened,  # the open network, to the bare forwarder's port
        }
        urls = {
            "open": f"http://127.0.0.1:{port}/big",
            "proxy": f"http://{NAME}:{port}/big",
            "floor": f"http://127.0.0.1:{bare}/big",
        }
        try:
            for way in ways:  # warm-up
                for _ in range(3):
                    await fetch(clients[way], urls[way])
            for _ in range(calls):
                for way in ways:
                    total, first, took = await fetch(clients[way], urls[way])
                    curl_times[way].append(total)
                    first_bytes[way].append(first)
                    call_times[way].append(took)
        finally:
            for client in {id(c): c for c in clients.values()}.values():
                await client.close()
    shown = {way: fmt_time(median(curl_times[way])) for way in ways}
    firsts = {way: fmt_time(median(first_bytes[way])) for way in ways}
    log(
        f"download (curl's time_total; first byte): proxy {shown['proxy']}; {firsts['proxy']}, "
        f"open {shown['open']}; {firsts['open']}, bare forwarder {shown['floor']}; "
        f"{firsts['floor']}"
    )
    ours, base = median(curl_times["proxy"]), median(curl_times["open"])
    floor = median(curl_times["floor"])
    whole = median(call_times["proxy"]) / median(call_times["open"])
    return [
        Row(
            "10 MB download, through the proxy vs open network",
            ours,
            base,
            f"≤ {DOWNLOAD_TARGET:g}x",
            ours <= base * DOWNLOAD_TARGET,
            note=f"curl's time_total, median of {calls}, alternating; first byte "
            f"{firsts['proxy']} vs {firsts['open']}; the whole bash call "
            f"{fmt_time(median(call_times['proxy']))} vs "
            f"{fmt_time(median(call_times['open']))} ({whole:.2f}x)",
        ),
        Row(
            "10 MB download, through a bare splice forwarder vs open network (the floor)",
            floor,
            base,
            "info",
            None,
            note=f"the same download through bare_forwarder (accept, connect, splice; no "
            f"parsing, no checks), alternating with the two above; first byte "
            f"{firsts['floor']}",
        ),
    ]


def make_tarball(tmp: Path, root: Path) -> str:
    """The tree's tarball, in the project (a command reads it from there)."""
    tree = tmp / "tree"
    for i in range(TREE_FILES):
        folder = tree / f"d{i // 20:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.js").write_text(f"module.exports = {i};\n")
    subprocess.run(["tar", "-cf", str(root / "tree.tar"), "-C", str(tree), "."], check=True)
    return "tree.tar"


async def unpack(client: RpcClient, tarball: str) -> float:
    command = f"rm -rf out && mkdir out && tar -xf {tarball} -C out && ls out | wc -l"
    start_time = now()
    result = await execute(client, "bash", {"command": command, "description": "Unpack"})
    took = now() - start_time
    assert result["output"].split()[0] == str(TREE_FILES // 20), result["output"]
    return took


async def many_files(quick: bool) -> list[Row]:
    calls = 6 if quick else 20
    times: dict[str, list[float]] = {"guarded": [], "unguarded": []}
    with tempfile.TemporaryDirectory(prefix="bench-creations-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        tarball = make_tarball(Path(tmp), root)
        off = {"TOOLHOST_SANDBOX_SIMULATE": "no-repo-guard"}
        clients = {
            "guarded": await start(root, Path(tmp), {}),
            "unguarded": await start(root, Path(tmp), {}, off),
        }
        try:
            for client in clients.values():  # warm-up
                await unpack(client, tarball)
            for _ in range(calls):
                for name, client in clients.items():
                    times[name].append(await unpack(client, tarball))
        finally:
            for client in clients.values():
                await client.close()
    ours, base = median(times["guarded"]), median(times["unguarded"])
    log(f"creations: guarded {fmt_time(ours)}, unguarded {fmt_time(base)}")
    return [
        Row(
            f"bash unpacking {TREE_FILES} files, new repositories guarded",
            ours,
            base,
            f"≤ {TREE_TARGET:g}x",
            ours <= base * TREE_TARGET,
            note=f"tar -x of {TREE_FILES} files in 100 folders into the project, median of "
            f"{calls}, alternating with the guard taken away (no-repo-guard), same run",
        )
    ]
