"""``webfetch`` of a 2.8 MB HTML page to Markdown vs OpenCode's converter, Turndown.

Ours: the whole ``webfetch`` call through the sidecar (``tools/execute``): the fetch
from a loopback HTTP server, the conversion, the truncation to what the model reads and
the saving of the full Markdown. Baseline: Turndown 7.2.5 on Node.js with the settings
OpenCode 1.18.33 uses (ATX headings, fenced code, ``-`` bullets, script/style/meta/link
removed), converting the same page already in memory, warmed up, in the same run. So
the ratio is conservative: Turndown's side does no I/O at all.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import tempfile
import threading
from pathlib import Path

import _npm
from _common import (
    Row,
    RpcClient,
    execute,
    log,
    median,
    now,
    server_env,
    toolhost_argv,
)
from webpage import page

SIZE = 2_800_000
TARGET = 1.0
TURNDOWN = """
const TurndownService = require(process.argv[2]);
const html = require("fs").readFileSync(process.argv[3], "utf8");
const rounds = Number(process.argv[4]);
const service = new TurndownService({
  headingStyle: "atx", hr: "---", bulletListMarker: "-", codeBlockStyle: "fenced", emDelimiter: "*",
});
service.remove(["script", "style", "meta", "link"]);
let markdown = service.turndown(html); // warm-up: the JIT, as in a long-running agent
const times = [];
for (let i = 0; i < rounds; i++) {
  const start = performance.now();
  markdown = service.turndown(html);
  times.push((performance.now() - start) / 1000);
}
process.stdout.write(JSON.stringify({ times, length: markdown.length }));
"""


def _serve(body: bytes) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def run(quick: bool) -> list[Row]:
    rounds = 3 if quick else 7
    turndown = _npm.ensure("turndown", "turndown@7.2.5", marker="node_modules/turndown")
    html = page(SIZE)
    with tempfile.TemporaryDirectory(prefix="bench-webfetch-") as tmp:
        scratch = Path(tmp)
        (scratch / "page.html").write_text(html, encoding="utf-8")
        (scratch / "turndown.js").write_text(TURNDOWN, encoding="utf-8")
        server = _serve(html.encode("utf-8"))
        url = f"http://127.0.0.1:{server.server_port}/page.html"
        root = scratch / "project"
        root.mkdir()
        env = server_env(scratch)
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env.pop(name, None)
        client = await RpcClient.spawn(toolhost_argv(), cwd=root, env=env)
        ours: list[float] = []
        try:
            await client.initialize(root)
            first = await execute(client, "webfetch", {"url": url})  # warm-up (imports)
            saved = Path(first["metadata"]["outputPath"]).read_text(encoding="utf-8")
            if "# Reference" not in first["output"] or len(saved) < SIZE // 2:
                raise RuntimeError("webfetch did not return the page as Markdown")
            for _ in range(rounds):
                start = now()
                await execute(client, "webfetch", {"url": url})
                ours.append(now() - start)
        finally:
            await client.close()
            server.shutdown()
        done = subprocess.run(
            [
                "node",
                str(scratch / "turndown.js"),
                str(turndown / "node_modules" / "turndown"),
                str(scratch / "page.html"),
                str(rounds),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        turned = json.loads(done.stdout)
    base = turned["times"]
    log(
        f"webfetch: ours {[round(s * 1e3) for s in ours]} ms; turndown "
        f"{[round(s * 1e3) for s in base]} ms; markdown {len(saved)} vs {turned['length']} chars"
    )
    ratio = median(ours) / median(base)
    return [
        Row(
            "webfetch 2.8 MB page → Markdown",
            median(ours),
            median(base),
            f"≤ {TARGET:g}x",
            ratio <= TARGET,
            note=f"whole call via the sidecar vs Turndown 7.2.5 (Node, warm, in memory); "
            f"median of {rounds}",
        )
    ]
