"""webfetch against a real HTTP server on 127.0.0.1 (reference §6.10)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import socket
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RecordingEditor, Runner
from tests.http_server import CHUNK, Handler, LocalServer, Outcome
from tools.builtin import webfetch as webfetch_module
from tools.builtin.lazy import builtin_tools
from tools.builtin.webfetch import BROWSER_USER_AGENT, MAX_RESPONSE_BYTES
from tools.config.effective import Config
from tools.host import ToolHost
from tools.permission.rules import rules_from_config
from tools.web.html import html_to_markdown, html_to_text

PAGE = """<!doctype html>
<html><head>
  <title>Guide</title>
  <meta charset="utf-8"><link rel="stylesheet" href="/s.css">
  <style>body { color: red }</style>
  <script>var secret = "tracking";</script>
</head><body>
  <h1>Getting started</h1>
  <p>Read the <a href="https://example.com/docs">docs</a> and <em>enjoy</em>
     it <strong>now</strong>.</p>
  <h2>Steps</h2>
  <ul><li>Install</li><li>Run</li></ul>
  <pre><code class="language-python">def main():
    return 42
</code></pre>
  <noscript>Enable JavaScript</noscript>
  <iframe src="/ad">ad frame</iframe>
  <script>console.log("more tracking")</script>
</body></html>
"""


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Requests must go straight to 127.0.0.1, whatever the machine's proxy settings.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer().start()
    yield local
    local.stop()


@pytest.fixture
def host(worktree: Path) -> ToolHost:
    return ToolHost(worktree, tools=[*builtin_tools(), webfetch_module.tool])


def ask_for_webfetch(run: Runner) -> None:
    # The defaults allow webfetch; a project rule makes it ask, so the editor sees it.
    run.host.set_config(Config(rules=rules_from_config({"webfetch": "ask"})))


def html_route(body: str, content_type: str = "text/html; charset=utf-8"):
    def route(handler: Handler) -> None:
        handler.reply(200, body.encode("utf-8"), content_type)

    return route


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


# --- formats ---------------------------------------------------------------------------


async def test_html_becomes_markdown(server: LocalServer, run: Runner) -> None:
    server.routes["/guide"] = html_route(PAGE)
    result = await run("webfetch", {"url": server.url("/guide")})
    assert not result.is_error, result.output
    assert result.title == f"{server.url('/guide')} (text/html; charset=utf-8)"
    lines = result.output.splitlines()
    assert "# Getting started" in lines
    assert "## Steps" in lines
    assert "Read the [docs](https://example.com/docs) and *enjoy* it **now**." in lines
    assert lines[lines.index("- Install") + 1] == "- Run"
    fence = lines.index("```python")
    assert lines[fence : fence + 4] == ["```python", "def main():", "    return 42", "```"]
    for dropped in ("tracking", "color: red", "Enable JavaScript", "s.css"):
        assert dropped not in result.output
    assert result.metadata == {"truncated": False}
    assert result.attachments == []


async def test_html_becomes_visible_text(server: LocalServer, run: Runner) -> None:
    server.routes["/guide"] = html_route(PAGE)
    result = await run("webfetch", {"url": server.url("/guide"), "format": "text"})
    assert not result.is_error, result.output
    assert result.output == (
        "Guide\n\nGetting started\n\nRead the docs and enjoy it now.\n\nSteps\n\n"
        "Install\nRun\n\ndef main():\n    return 42"
    )


async def test_html_format_returns_the_source(server: LocalServer, run: Runner) -> None:
    server.routes["/guide"] = html_route(PAGE)
    result = await run("webfetch", {"url": server.url("/guide"), "format": "html"})
    assert result.output == PAGE


@pytest.mark.parametrize("fmt", ["markdown", "text", "html"])
async def test_non_html_bodies_come_back_unchanged(
    server: LocalServer, run: Runner, fmt: str
) -> None:
    body = "# Not converted\n\n<b>kept</b>  as   is\n"
    server.routes["/notes.md"] = html_route(body, "text/markdown")
    result = await run("webfetch", {"url": server.url("/notes.md"), "format": fmt})
    assert result.output == body
    assert result.title == f"{server.url('/notes.md')} (text/markdown)"


async def test_accept_and_user_agent_headers_follow_the_format(
    server: LocalServer, run: Runner
) -> None:
    server.routes["/a"] = html_route("ok", "text/plain")
    for fmt in ("markdown", "text", "html"):
        await run("webfetch", {"url": server.url("/a"), "format": fmt})
    accepts = [seen.headers["accept"] for seen in server.seen]
    assert accepts[0].startswith("text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8")
    assert accepts[1].startswith("text/plain;q=1.0")
    assert accepts[2].startswith("text/html;q=1.0, application/xhtml+xml;q=0.9")
    assert {seen.headers["user-agent"] for seen in server.seen} == {BROWSER_USER_AGENT}


async def test_body_is_decoded_with_the_declared_charset(server: LocalServer, run: Runner) -> None:
    def route(handler: Handler) -> None:
        handler.reply(
            200, "café – ünïcode?".encode("latin-1", "replace"), "text/plain; charset=ISO-8859-1"
        )

    server.routes["/latin"] = route
    result = await run("webfetch", {"url": server.url("/latin")})
    assert result.output == "café ? ünïcode?"


async def test_invalid_utf8_is_replaced_not_fatal(server: LocalServer, run: Runner) -> None:
    def route(handler: Handler) -> None:
        handler.reply(200, b"ok \xff\xfe end", "text/plain")

    server.routes["/bytes"] = route
    result = await run("webfetch", {"url": server.url("/bytes")})
    assert not result.is_error
    assert result.output == "ok \ufffd\ufffd end"


# --- images ----------------------------------------------------------------------------


async def test_image_comes_back_as_an_attachment(server: LocalServer, run: Runner) -> None:
    png = png_bytes()

    def route(handler: Handler) -> None:
        handler.reply(200, png, "image/png")

    server.routes["/img/pixel.png"] = route
    result = await run("webfetch", {"url": server.url("/img/pixel.png")})
    assert not result.is_error, result.output
    assert result.output == "Image fetched successfully"
    assert result.title == f"{server.url('/img/pixel.png')} (image/png)"
    (attachment,) = result.attachments
    assert attachment.mime == "image/png"
    assert attachment.url == "data:image/png;base64," + base64.b64encode(png).decode()
    assert attachment.filename == "pixel.png"


async def test_svg_is_text_not_an_image(server: LocalServer, run: Runner) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="1"/></svg>'
    server.routes["/logo.svg"] = html_route(svg, "image/svg+xml")
    result = await run("webfetch", {"url": server.url("/logo.svg")})
    assert result.output == svg
    assert result.attachments == []


# --- failures --------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/file", "file:///etc/passwd", "127.0.0.1/x"])
async def test_only_http_and_https_are_fetched(
    run: Runner, editor: RecordingEditor, url: str
) -> None:
    ask_for_webfetch(run)
    result = await run("webfetch", {"url": url})
    assert result.is_error
    assert result.output == "URL must start with http:// or https://"
    assert result.metadata["error"] == "failed"
    assert editor.asks == []  # rejected before anyone is asked


@pytest.mark.parametrize(
    ("url", "reason"),
    [("http://", "it has no host name"), ("http://[::1", "Invalid port: ':1'")],
)
async def test_malformed_urls_are_refused_before_asking(
    run: Runner, editor: RecordingEditor, url: str, reason: str
) -> None:
    ask_for_webfetch(run)
    result = await run("webfetch", {"url": url})
    assert result.output == f"Invalid URL {url}: {reason}. Fix the URL and try again."
    assert result.metadata["error"] == "failed"
    assert editor.asks == []


async def test_permission_is_asked_with_the_url(
    server: LocalServer, run: Runner, editor: RecordingEditor
) -> None:
    ask_for_webfetch(run)
    server.routes["/a"] = html_route("ok", "text/plain")
    await run("webfetch", {"url": server.url("/a"), "format": "text", "timeout": 5})
    (ask,) = editor.asks
    assert ask.permission == "webfetch"
    assert ask.patterns == [server.url("/a")]
    assert ask.always == ["*"]
    assert ask.metadata == {"url": server.url("/a"), "format": "text", "timeout": 5}


async def test_rejected_permission_fetches_nothing(
    server: LocalServer, run: Runner, editor: RecordingEditor
) -> None:
    ask_for_webfetch(run)
    editor.reply = "reject"
    server.routes["/a"] = html_route("ok", "text/plain")
    result = await run("webfetch", {"url": server.url("/a")})
    assert result.metadata["error"] == "permission_rejected"
    assert server.seen == []


async def test_error_status_is_reported(server: LocalServer, run: Runner) -> None:
    result = await run("webfetch", {"url": server.url("/missing")})
    assert result.is_error
    assert result.output == "Request failed with status code: 404"
    assert result.metadata["error"] == "failed"


@pytest.mark.parametrize("timeout", [0, -1])
async def test_non_positive_timeout_is_rejected_by_the_schema(
    server: LocalServer, run: Runner, timeout: int
) -> None:
    result = await run("webfetch", {"url": server.url("/a"), "timeout": timeout})
    assert result.metadata["error"] == "invalid_arguments"
    assert "- timeout: input should be greater than 0" in result.output
    assert server.seen == []


async def test_timeout_above_the_maximum_is_clamped_not_rejected(
    server: LocalServer, run: Runner
) -> None:
    server.routes["/a"] = html_route("ok", "text/plain")
    result = await run("webfetch", {"url": server.url("/a"), "timeout": 600})
    assert not result.is_error
    assert result.output == "ok"


async def test_connection_refused_is_a_clear_failure(run: Runner) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = await run("webfetch", {"url": f"http://127.0.0.1:{port}/"})
    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.output.startswith(f"Request to http://127.0.0.1:{port}/ failed: ")
    assert result.output.endswith("Check the URL, or try again later.")


# --- redirects -------------------------------------------------------------------------


async def test_redirect_is_followed(server: LocalServer, run: Runner) -> None:
    def moved(handler: Handler) -> None:
        handler.reply(301, b"", headers={"Location": "/new/home.txt"})

    server.routes["/old"] = moved
    server.routes["/new/home.txt"] = html_route("arrived", "text/plain")
    result = await run("webfetch", {"url": server.url("/old")})
    assert not result.is_error, result.output
    assert result.output == "arrived"
    assert result.title == f"{server.url('/old')} (text/plain)"
    assert server.paths() == ["/old", "/new/home.txt"]


async def test_redirect_loop_is_a_clear_error(server: LocalServer, run: Runner) -> None:
    def loop(handler: Handler) -> None:
        handler.reply(302, b"", headers={"Location": "/loop"})

    server.routes["/loop"] = loop
    result = await run("webfetch", {"url": server.url("/loop")})
    assert result.is_error
    assert result.metadata["error"] == "failed"
    assert result.output.startswith(
        f"Too many redirects (more than 10) while fetching {server.url('/loop')}"
    )
    assert "redirecting in a loop" in result.output
    assert server.paths() == ["/loop"] * 11  # the first request and 10 redirects


# --- Cloudflare ------------------------------------------------------------------------


async def test_cloudflare_challenge_is_retried_with_a_plain_user_agent(
    server: LocalServer, run: Runner
) -> None:
    def guarded(handler: Handler) -> None:
        if handler.headers["User-Agent"] == "opencode":
            handler.reply(200, b"welcome", "text/plain")
        else:
            handler.reply(403, b"challenge page", "text/html", {"cf-mitigated": "challenge"})

    server.routes["/cf"] = guarded
    result = await run("webfetch", {"url": server.url("/cf")})
    assert not result.is_error, result.output
    assert result.output == "welcome"
    assert [seen.headers["user-agent"] for seen in server.seen] == [BROWSER_USER_AGENT, "opencode"]
    # Only the User-Agent changes on the retry.
    assert server.seen[0].headers["accept"] == server.seen[1].headers["accept"]


async def test_a_plain_403_is_not_retried(server: LocalServer, run: Runner) -> None:
    def forbidden(handler: Handler) -> None:
        handler.reply(403, b"no", "text/plain")

    server.routes["/private"] = forbidden
    result = await run("webfetch", {"url": server.url("/private")})
    assert result.output == "Request failed with status code: 403"
    assert server.paths() == ["/private"]


async def test_a_challenge_is_retried_only_once(server: LocalServer, run: Runner) -> None:
    def always(handler: Handler) -> None:
        handler.reply(403, b"challenge", "text/html", {"cf-mitigated": "challenge"})

    server.routes["/cf"] = always
    result = await run("webfetch", {"url": server.url("/cf")})
    assert result.output == "Request failed with status code: 403"
    assert len(server.seen) == 2


# --- size cap --------------------------------------------------------------------------

HUGE = 256 * 1024 * 1024


def endless_chunks(total: int) -> Iterator[bytes]:
    block = b"x" * CHUNK
    return itertools.repeat(block, total // CHUNK)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_huge_body_is_cut_off_at_the_cap(
    server: LocalServer, run: Runner, declared: bool
) -> None:
    outcome = Outcome()

    def huge(handler: Handler) -> None:
        handler.small_send_buffer()
        framing = {"Content-Length": str(HUGE)} if declared else {"Transfer-Encoding": "chunked"}
        handler.head(200, {"Content-Type": "text/plain", **framing})
        handler.stream(outcome, endless_chunks(HUGE), chunked=not declared)

    server.routes["/huge"] = huge
    started = time.monotonic()
    result = await run("webfetch", {"url": server.url("/huge")})
    elapsed = time.monotonic() - started
    assert result.is_error
    assert result.output == "Response too large (exceeds 5MB limit)"
    assert result.metadata["error"] == "failed"
    assert elapsed < 5
    # The server notices the dropped connection long before it has sent everything.
    assert await asyncio.to_thread(outcome.done.wait, 10)
    assert outcome.disconnected
    # With a small send buffer what was sent is close to what was read (plus what the
    # kernel holds in flight): about the cap, nowhere near the 256 MiB on offer.
    assert outcome.sent < MAX_RESPONSE_BYTES + 8 * 1024 * 1024, outcome.sent
    if declared:  # the header alone gives the size away: the body is never read
        assert outcome.sent < MAX_RESPONSE_BYTES
    else:  # nothing gives the size away: the client had to read past the cap
        assert outcome.sent > MAX_RESPONSE_BYTES


@pytest.mark.parametrize(
    ("size", "fits"), [(MAX_RESPONSE_BYTES, True), (MAX_RESPONSE_BYTES + 1, False)]
)
async def test_cap_boundary_without_content_length(
    server: LocalServer, run: Runner, size: int, fits: bool
) -> None:
    outcome = Outcome()

    def exact(handler: Handler) -> None:
        handler.head(200, {"Content-Type": "text/plain", "Transfer-Encoding": "chunked"})
        pieces = [b"y" * CHUNK] * (size // CHUNK) + [b"y" * (size % CHUNK)]
        handler.stream(outcome, iter([p for p in pieces if p]), chunked=True)

    server.routes["/exact"] = exact
    result = await run("webfetch", {"url": server.url("/exact")})
    if fits:
        assert not result.is_error, result.output[:200]
        assert result.metadata["truncated"] is True  # 5 MiB is far past the output limit
    else:
        assert result.output == "Response too large (exceeds 5MB limit)"


# --- time ------------------------------------------------------------------------------


async def test_slow_body_times_out(server: LocalServer, run: Runner) -> None:
    outcome = Outcome()

    def slow(handler: Handler) -> None:
        handler.head(200, {"Content-Type": "text/plain", "Content-Length": "10000"})
        # A byte every 0.1 s: no single read waits long, but the whole takes 1000 s.
        trickle = itertools.repeat(b".", 10000)
        handler.stream(outcome, trickle, chunked=False, pause=0.1, stop=server.stopping)

    server.routes["/slow"] = slow
    started = time.monotonic()
    result = await run("webfetch", {"url": server.url("/slow"), "timeout": 1})
    elapsed = time.monotonic() - started
    assert result.is_error
    assert result.metadata["error"] == "timeout"
    assert result.output.startswith("Request timed out after 1 s. ")
    assert "larger timeout (at most 120 seconds)" in result.output
    assert elapsed < 3
    assert await asyncio.to_thread(outcome.done.wait, 5)
    assert outcome.disconnected


async def test_cancellation_drops_the_connection(server: LocalServer, run: Runner) -> None:
    outcome = Outcome()
    started_body = asyncio.Event()
    loop = asyncio.get_running_loop()

    def trickle(handler: Handler) -> None:
        handler.head(200, {"Content-Type": "text/plain", "Transfer-Encoding": "chunked"})
        loop.call_soon_threadsafe(started_body.set)
        chunks = itertools.repeat(b"tick\n", 100_000)
        handler.stream(outcome, chunks, chunked=True, pause=0.02, stop=server.stopping)

    server.routes["/trickle"] = trickle
    task = asyncio.create_task(run("webfetch", {"url": server.url("/trickle")}))
    await asyncio.wait_for(started_body.wait(), 5)
    await asyncio.sleep(0.3)
    assert not task.done()
    task.cancel()
    cancelled_at = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled_at < 0.5
    assert await asyncio.to_thread(outcome.done.wait, 3)
    assert outcome.disconnected


# --- truncation ------------------------------------------------------------------------


async def test_long_output_is_truncated_by_the_generic_limit(
    server: LocalServer, run: Runner
) -> None:
    body = "\n".join(f"line {n}" for n in range(5000))
    server.routes["/long"] = html_route(body, "text/plain")
    result = await run("webfetch", {"url": server.url("/long")})
    assert not result.is_error
    assert result.metadata["truncated"] is True
    assert Path(result.metadata["outputPath"]).read_text() == body
    assert result.output.startswith("line 0\nline 1\n")
    assert "line 4999" not in result.output


# --- HTML conversion, directly ---------------------------------------------------------


def test_markdown_uses_dash_bullets_rules_and_fences() -> None:
    markdown = html_to_markdown(
        "<ol><li>first</li></ol><ul><li>a<ul><li>b</li></ul></li></ul><hr>"
        "<pre>plain\n  code</pre><p>x<br>y</p>"
    )
    assert markdown == "1. first\n\n- a\n  - b\n\n---\n\n```\nplain\n  code\n```\n\nx  \ny"


def test_text_tidies_whitespace_and_keeps_preformatted_text() -> None:
    text = html_to_text(
        "<body>\n  <div>  one\n   two </div><div>three<br><br><br><br>four</div>"
        "<pre>  keep\n    this</pre><p>a &amp; b</p>"
        "<table><tr><td>c1</td><td>c2</td></tr></table>\n\n</body>"
    )
    assert text == "one two\nthree\n\nfour\n\n  keep\n    this\n\na & b\n\nc1 c2"


def test_deeply_nested_html_still_converts() -> None:
    html = "<div>" * 5000 + "deep <b>words</b>" + "</div>" * 5000
    assert html_to_markdown(html) == "deep words"
    assert html_to_text(html) == "deep words"
