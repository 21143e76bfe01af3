"""The SDK's door: the official MCP SDK's low-level ``Server`` over a Backend.

It serves a connection that does not open with a handshake-era ``initialize`` (the
2026-07-28 revision: no handshake, a per-request envelope, change notifications through
``subscriptions/listen``), and every connection with ``TOOLHOST_MCP_ENGINE=sdk``. The SDK
owns the protocol there: negotiation, cancellation (``notifications/cancelled`` cancels
the handler, which cancels the tool) and progress tokens. Handshake-era clients are served
by ``server.mcp.lean``, which answers as this door does. This module only translates.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from server import __version__
from server.mcp.backend import Backend, CallHooks, turn_of
from server.mcp.catalogue import error_result, mcp_result, mcp_tool
from server.mcp.progress import CallProgress
from server.mcp.prompts import ASK_SCHEMA, INSTRUCTIONS, ask_message, reply_of

log = logging.getLogger("toolhost.mcp")


class ToolhostMcp:
    """One MCP connection (this process serves one client over stdio)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        backend.on_changed = self.tools_changed
        self.bus = InMemorySubscriptionBus()
        self.sessions: list[ServerSession] = []
        self.server: Server[Any] = Server(
            "toolhost",
            version=__version__,
            title="toolhost",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    async def tools_changed(self) -> None:
        """Tell the client to list the tools again (handshake era and listen streams)."""
        for session in list(self.sessions):
            try:
                await session.send_tool_list_changed()
            except Exception as error:  # the client is gone
                log.debug("tools/list_changed not sent: %s", error)
        await self.bus.publish(ToolsListChanged())

    async def _initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        # The connection's session outlives this notification: list_changed goes through it.
        self.sessions.append(ctx.session)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = await self.backend.list_tools()
        return types.ListToolsResult.model_validate({"tools": [mcp_tool(t) for t in tools]})

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        progress = ProgressPump(ctx.session, has_progress_token(ctx.meta))
        hooks = CallHooks(progress.push, elicit_hook(ctx), turn_of(params.meta))
        try:
            result = mcp_result(await self.backend.call(params.name, params.arguments or {}, hooks))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a fault outside the tool: the client still gets a result
            log.exception("tools/call %s failed", params.name)
            result = error_result(
                f"toolhost failed unexpectedly while running {params.name} ({error}). You may "
                "retry, or continue another way."
            )
        finally:
            await progress.close()
        return types.CallToolResult.model_validate(result)


def can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    """The client declared form elicitation (an empty ``elicitation`` means form)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or not ctx.session.can_send_request:
        return False
    return elicitation.form is not None or elicitation.url is None


def elicit_hook(ctx: ServerRequestContext[Any]) -> Any:
    if not can_elicit(ctx):
        return None

    async def elicit(ask: dict[str, Any]) -> dict[str, Any] | None:
        try:
            answer = await ctx.session.elicit_form(
                ask_message(ask), ASK_SCHEMA, related_request_id=ctx.request_id
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the client refused the request
            log.warning("elicitation for %s failed: %s", ask.get("tool"), error)
            return None
        return reply_of(answer.action, answer.content)

    return elicit


def has_progress_token(meta: Any) -> bool:
    """The request asked for progress (the SDK's ``ctx.meta`` names the token by its
    Python field name)."""
    token = meta.get("progress_token") if isinstance(meta, dict) else None
    return isinstance(token, str | int) and not isinstance(token, bool)


class ProgressPump:
    """A running tool's updates, and the heartbeat while it is quiet
    (``server.mcp.progress``), as progress notifications in order, all sent before the
    result (nothing when the call carried no progress token)."""

    def __init__(self, session: ServerSession, wanted: bool) -> None:
        self.session = session
        self.queue: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.progress = CallProgress(self._queue) if wanted else None
        if self.progress is not None:
            self.progress.start()

    def push(self, update: dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress.push(update)

    def _queue(self, count: int, message: str) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._send())
        self.queue.put_nowait((count, message))

    async def _send(self) -> None:
        while (item := await self.queue.get()) is not None:
            try:
                await self.session.report_progress(item[0], None, item[1])
            except Exception as error:  # the client went away
                log.debug("progress not sent: %s", error)

    async def close(self) -> None:
        if self.progress is not None:
            self.progress.end()
        if self.task is None:
            return
        self.queue.put_nowait(None)
        try:
            await asyncio.shield(self.task)
        except asyncio.CancelledError:  # the call was cancelled: drop what is left
            self.task.cancel()
            raise
        except Exception as error:
            log.debug("progress ended: %s", error)
