"""``websearch``: one web search through the provider the user configured (OpenCode 1.18.33).

As in 1.18.33 the providers are Exa (``web_search_exa`` on ``mcp.exa.ai``) and Parallel
(``web_search`` on ``search.parallel.ai``), each called as one MCP ``tools/call`` over HTTP
(the answer may come as JSON or as server-sent events). The tool is offered only when one
of them is configured, with 1.18.33's own switches (``provider_from_env``); toolhost has no
provider of its own to fall back on, as OpenCode's ``opencode`` provider is. A person asked
``websearch`` for the query, as 1.18.33 asks, unless the rules allow it (the default).

``TOOLHOST_WEBSEARCH_URL`` points the chosen provider's requests at another endpoint that
speaks the same MCP call (a company proxy, a self-hosted Exa MCP server).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from tools.arguments.model import Arguments, AtLeast
from tools.builtin import listed
from tools.builtin.listed import Provider, provider_from_env
from tools.context import Host, ToolContext
from tools.errors import ToolError
from tools.result import ToolResult
from tools.tool import Annotations, Caller, define

EXA_URL = "https://mcp.exa.ai/mcp"
PARALLEL_URL = "https://search.parallel.ai/mcp"
NAMES: dict[Provider, str] = {"exa": "Exa Web Search", "parallel": "Parallel Web Search"}
NO_RESULTS = "No search results found. Please try a different query."
TIMEOUT_SECONDS = 25.0
MAX_RESPONSE_BYTES = 256 * 1024
DEFAULT_RESULTS = 8
NOT_CONFIGURED = (
    "No web search provider is configured, so the web cannot be searched. The user can set "
    "OPENCODE_ENABLE_EXA=1 (with EXA_API_KEY) or OPENCODE_ENABLE_PARALLEL=1 (with "
    "PARALLEL_API_KEY) in the sidecar's environment. Use webfetch on a URL you know instead."
)


@dataclass(frozen=True, kw_only=True)
class WebSearchParams(Arguments):
    query: str
    """Websearch query"""
    numResults: Annotated[int, AtLeast(1)] | None = None
    """Number of search results to return (default: 8)"""
    livecrawl: Literal["fallback", "preferred"] | None = None
    """Live crawl mode - 'fallback': use live crawling as backup if cached content unavailable,
    'preferred': prioritize live crawling (default: 'fallback')"""
    type: Literal["auto", "fast", "deep"] | None = None
    """Search type - 'auto': balanced search (default), 'fast': quick results, 'deep':
    comprehensive search"""
    contextMaxCharacters: Annotated[int, AtLeast(1)] | None = None
    """Maximum characters for context string optimized for LLMs (default: 10000)"""


def describe(base: str, host: Host, caller: Caller) -> str:
    return base.replace("{{year}}", str(date.today().year))


async def execute(args: WebSearchParams, ctx: ToolContext) -> ToolResult:
    provider = provider_from_env()
    if provider is None:
        raise ToolError(NOT_CONFIGURED)
    name = NAMES[provider]
    ctx.metadata(f'{name} "{args.query}"', {"provider": provider})
    await ctx.ask(
        "websearch",
        [args.query],
        ["*"],
        {
            "query": args.query,
            "numResults": args.numResults,
            "livecrawl": args.livecrawl,
            "type": args.type,
            "contextMaxCharacters": args.contextMaxCharacters,
            "provider": provider,
        },
        title=f'Search the web ({name}) for "{args.query}"',
    )
    url, tool, arguments, headers = request_for(provider, args, ctx.session_id)
    text = await search(url, tool, arguments, headers, name)
    return ToolResult(
        title=f"{name}: {args.query}",
        output=text or NO_RESULTS,
        metadata={"provider": provider},
    )


def request_for(
    provider: Provider, args: WebSearchParams, session_id: str
) -> tuple[str, str, dict[str, Any], dict[str, str]]:
    """The endpoint, the MCP tool, its arguments and the headers, as 1.18.33 sends them."""
    override = os.environ.get("TOOLHOST_WEBSEARCH_URL")
    if provider == "parallel":
        key = os.environ.get("PARALLEL_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        arguments: dict[str, Any] = {
            "objective": args.query,
            "search_queries": [args.query],
            "session_id": session_id,
        }
        return override or PARALLEL_URL, "web_search", arguments, headers
    url = override or EXA_URL
    key = os.environ.get("EXA_API_KEY")
    if key:
        url += ("&" if "?" in url else "?") + urlencode({"exaApiKey": key})
    arguments = {
        "query": args.query,
        "type": args.type or "auto",
        "numResults": args.numResults or DEFAULT_RESULTS,
        "livecrawl": args.livecrawl or "fallback",
    }
    if args.contextMaxCharacters is not None:
        arguments["contextMaxCharacters"] = args.contextMaxCharacters
    return url, "web_search_exa", arguments, {}


async def search(
    url: str, tool: str, arguments: dict[str, Any], headers: dict[str, str], name: str
) -> str | None:
    """One MCP ``tools/call`` over HTTP; the first text of its result, or None."""
    import httpx  # only when searching: listing the tool must not load the HTTP stack

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    request_headers = {
        "Accept": "application/json, text/event-stream",
        "User-Agent": "toolhost",
        **headers,
    }
    try:
        async with (
            httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client,
            client.stream("POST", url, json=body, headers=request_headers) as response,
        ):
            if response.status_code >= 400:
                raise ToolError(refused(name, response.status_code))
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_RESPONSE_BYTES:
                    raise ToolError(
                        f"{name} answered with more than {MAX_RESPONSE_BYTES // 1024} KiB, so "
                        "the answer was dropped. Search again with a smaller numResults or "
                        "contextMaxCharacters."
                    )
    except httpx.TimeoutException:
        raise ToolError(
            f"{name} did not answer within {TIMEOUT_SECONDS:.0f} seconds. Try again, or try a "
            "simpler query.",
            kind="timeout",
        ) from None
    except httpx.HTTPError as error:
        raise ToolError(
            f"Could not reach {name} ({type(error).__name__}: {error}). The web search failed; "
            "try again later, or use webfetch on a URL you know."
        ) from None
    return first_text(raw.decode("utf-8", errors="replace"))


def refused(name: str, status: int) -> str:
    if status in (401, 403):
        return (
            f"{name} refused the search (HTTP {status}): its API key is missing or not accepted. "
            "The user can set EXA_API_KEY or PARALLEL_API_KEY for the sidecar."
        )
    if status == 429:
        return f"{name} is rate limiting searches (HTTP 429). Wait before searching again."
    return f"{name} answered HTTP {status}, so the search failed. Try again later."


def first_text(body: str) -> str | None:
    """The first text content of an MCP result, sent as one JSON body or as SSE ``data:``
    lines (as 1.18.33 reads it)."""
    found = _text_of(body.strip())
    if found:
        return found
    for line in body.split("\n"):
        if line.startswith("data: "):
            found = _text_of(line[6:].strip())
            if found:
                return found
    return None


def _text_of(payload: str) -> str | None:
    if not payload.startswith("{"):
        return None
    try:
        message = json.loads(payload)
    except ValueError:
        return None
    result = message.get("result") if isinstance(message, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    for item in content if isinstance(content, list) else []:
        text = item.get("text") if isinstance(item, dict) else None
        if isinstance(text, str) and text:
            return text
    return None


tool = define(
    "websearch",
    parameters=WebSearchParams,
    execute=execute,
    kind="fetch",
    annotations=Annotations(read_only=True, open_world=True),
    describe=describe,
    available=listed.websearch,
)
