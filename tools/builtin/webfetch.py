"""``webfetch``: fetch a URL and return it as Markdown, text or HTML (reference §6.10).

With ``sandbox.network``'s domain lists, every connection (redirects too) goes through
toolhost's proxy (``tools.network``) on a listener in the sidecar: the same lists, the
same asks and the same checks of the address a name resolves to as bash commands get.
"""

from __future__ import annotations

import asyncio
import base64
import posixpath
from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import unquote

import httpx

from tools.arguments.model import Above, Arguments
from tools.config.effective import NetworkLists
from tools.context import ToolContext
from tools.errors import PermissionDeniedError, PermissionRejectedError, ToolError
from tools.network.gate import ASK_SECONDS, Gate, Lists
from tools.network.proxy import loopback
from tools.result import Attachment, ToolResult
from tools.tool import Annotations, define
from tools.web.html import html_to_markdown, html_to_text

Format = Literal["text", "markdown", "html"]

MAX_RESPONSE_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 120.0
MAX_REDIRECTS = 10
TOO_LARGE = "Response too large (exceeds 5MB limit)"

BROWSER_USER_AGENT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/143.0.0.0 Safari/537.36"
)
# Cloudflare challenges a browser User-Agent whose TLS fingerprint is not a browser's;
# an honest, plain one is let through (OpenCode sends this same value).
RETRY_USER_AGENT = "opencode"
ACCEPT: dict[str, str] = {
    "markdown": "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, "
    "text/html;q=0.7, */*;q=0.1",
    "text": "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, "
    "text/markdown;q=0.7, */*;q=0.1",
}
HTML_MIMES = ("text/html", "application/xhtml+xml")
NOT_IMAGES = ("image/svg+xml", "image/vnd.fastbidsheet")


@dataclass(frozen=True, kw_only=True)
class WebFetchParams(Arguments):
    url: str
    """The URL to fetch; it must start with http:// or https://"""
    format: Format = "markdown"
    """How to return the content: markdown (the default), text, or html"""
    timeout: Annotated[float, Above(0)] | None = None
    """Timeout in seconds for the whole request (default 30; values above 120 are treated as 120)"""


@dataclass
class Fetched:
    url: httpx.URL  # after redirects
    content_type: str
    charset: str | None
    body: bytes


async def execute(args: WebFetchParams, ctx: ToolContext) -> ToolResult:
    _check_url(args.url)
    await ctx.ask(
        "webfetch",
        [args.url],
        ["*"],
        {"url": args.url, "format": args.format, "timeout": args.timeout},
        title=f"Fetch {args.url}",
    )
    timeout = min(args.timeout or DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS)
    lists = ctx.host.config.sandbox.network
    gate = (
        Gate(ctx, Lists.parse(lists.allow, lists.deny)) if isinstance(lists, NetworkLists) else None
    )
    try:
        if gate is None:
            async with asyncio.timeout(timeout):
                fetched = await fetch(args.url, args.format, timeout)
        else:  # the time a person takes to answer an ask is not the fetch's
            async with asyncio.timeout(timeout + ASK_SECONDS):
                fetched = await _through_proxy(args, timeout, gate)
    except TimeoutError:
        raise _timed_out(timeout) from None

    title = f"{args.url} ({fetched.content_type})"
    mime = fetched.content_type.split(";")[0].strip().lower()
    if mime.startswith("image/") and mime not in NOT_IMAGES:
        data = base64.b64encode(fetched.body).decode("ascii")
        attachment = Attachment(mime, f"data:{mime};base64,{data}", _filename(fetched.url))
        return ToolResult(title, "Image fetched successfully", {}, [attachment])
    text = _decode(fetched.body, fetched.charset)
    if mime in HTML_MIMES and args.format != "html":
        convert = html_to_markdown if args.format == "markdown" else html_to_text
        # Parsing megabytes of HTML must not stall the event loop.
        text = await asyncio.to_thread(convert, text)
    return ToolResult(title, text, {})


async def _through_proxy(args: WebFetchParams, timeout: float, gate: Gate) -> Fetched:
    """``fetch`` through the domain lists' proxy; a refusal is said as the gate said it.

    A person's answer is waited for outside the fetch's own timeout (httpx's connect
    timeout is the ask's, the gate's ``ASK_SECONDS``)."""
    async with loopback(gate) as proxy:
        try:
            return await fetch(args.url, args.format, timeout, proxy=proxy)
        except ToolError:
            if not gate.refused:
                raise
    refusal = gate.refused[-1]
    message = (
        f"Network access to {refusal.host}:{refusal.port} was refused: {refusal.reason}. "
        "webfetch reaches only what sandbox.network.allow lists, or what the user allows "
        "when asked. Do not try to reach it another way; ask the user to allow it."
    )
    error = PermissionRejectedError if refusal.by_person else PermissionDeniedError
    raise error(message, metadata={"network": gate.report()})


async def fetch(url: str, format: Format, timeout: float, *, proxy: str | None = None) -> Fetched:
    """GET ``url``; the caller bounds the total time, httpx bounds each network wait.

    ``proxy``: every connection goes through it (it may wait on a person's answer)."""
    headers = {"Accept": ACCEPT[format], "Accept-Language": "en-US,en;q=0.9"}
    waits = httpx.Timeout(timeout, connect=None) if proxy else httpx.Timeout(timeout)
    try:
        async with httpx.AsyncClient(
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
            timeout=waits,
            proxy=proxy,
            trust_env=proxy is None,
        ) as client:
            for user_agent in (BROWSER_USER_AGENT, RETRY_USER_AGENT):
                request_headers = {**headers, "User-Agent": user_agent}
                # Leaving the block closes the connection, also on error or cancellation.
                async with client.stream("GET", url, headers=request_headers) as response:
                    if user_agent == BROWSER_USER_AGENT and _cloudflare_challenge(response):
                        continue  # retry once with the plain User-Agent
                    return await _read(response)
    except httpx.TimeoutException:
        raise _timed_out(timeout) from None
    except httpx.TooManyRedirects:
        raise ToolError(
            f"Too many redirects (more than {MAX_REDIRECTS}) while fetching {url}: the site "
            "is probably redirecting in a loop. Check the URL, or fetch the final address "
            "directly."
        ) from None
    except httpx.InvalidURL as error:
        raise _invalid_url(url, _reason(error)) from None
    except httpx.HTTPError as error:
        raise ToolError(
            f"Request to {url} failed: {_reason(error)}. Check the URL, or try again later."
        ) from None
    raise AssertionError("unreachable: the second attempt always returns")


def _check_url(url: str) -> None:
    """Refuse what cannot be fetched before anyone is asked about it."""
    if not url.startswith(("http://", "https://")):
        raise ToolError("URL must start with http:// or https://")
    try:
        host = httpx.URL(url).host
    except httpx.InvalidURL as error:
        raise _invalid_url(url, _reason(error)) from None
    if not host:
        raise _invalid_url(url, "it has no host name")


def _invalid_url(url: str, reason: str) -> ToolError:
    return ToolError(f"Invalid URL {url}: {reason}. Fix the URL and try again.")


def _reason(error: Exception) -> str:
    return str(error).rstrip(".") or type(error).__name__


def _cloudflare_challenge(response: httpx.Response) -> bool:
    return (
        response.status_code == 403
        and response.headers.get("cf-mitigated", "").strip().lower() == "challenge"
    )


async def _read(response: httpx.Response) -> Fetched:
    if not response.is_success:
        raise ToolError(f"Request failed with status code: {response.status_code}")
    length = response.headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
        raise ToolError(TOO_LARGE)
    # Content-Length may be absent or wrong: count what actually arrives (decoded, so
    # a compressed bomb is capped too) and stop as soon as the cap is passed.
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            raise ToolError(TOO_LARGE)
    return Fetched(
        url=response.url,
        content_type=response.headers.get("content-type", ""),
        charset=response.charset_encoding,
        body=bytes(body),
    )


def _decode(body: bytes, charset: str | None) -> str:
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = body.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


def _filename(url: httpx.URL) -> str | None:
    return posixpath.basename(unquote(url.path)) or None


def _timed_out(timeout: float) -> ToolError:
    hint = (
        "The server did not finish responding in time; retry with a larger timeout "
        f"(at most {MAX_TIMEOUT_SECONDS:g} seconds), or try a different URL."
        if timeout < MAX_TIMEOUT_SECONDS
        else "That is the longest allowed; try a different URL or a smaller page."
    )
    return ToolError(f"Request timed out after {timeout:g} s. {hint}", kind="timeout")


tool = define(
    "webfetch",
    parameters=WebFetchParams,
    execute=execute,
    kind="fetch",
    annotations=Annotations(read_only=True, open_world=True),
)
