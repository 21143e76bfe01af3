"""The sidecar's own sub-agent runner: an OpenAI-compatible chat-completions loop.

Streams each completion (``stream: true``, server-sent events), runs the tool calls
it asks for in the child session through ``ToolHost.execute`` (so the child's rules,
progress and cancellation apply), feeds their output back, and stops at the first
answer without tool calls: its text is the result.  As in OpenCode, a call that a
rule denies, or that the user rejects without a word, stops the sub-agent
(``experimental.continue_loop_on_deny`` lets it go on); rejection with feedback goes
back to the model.

The conversation stays on the ``Child``, so ``task_id`` resumes it.  httpx does the
HTTP (a dependency already, for webfetch); cancelling the call closes the stream.
"""

from __future__ import annotations

import json
import platform
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from tools.agents.endpoints import Endpoint, endpoint_for
from tools.agents.requests import SubagentFailed, TaskRequest
from tools.result import ToolResult

if TYPE_CHECKING:
    from tools.context import ToolContext

# With no ``steps`` in the agent's config: enough for real work, not a runaway bill.
DEFAULT_MAX_STEPS = 50
LAST_STEP = (
    "You have reached the maximum number of steps for this task. Do not call any more "
    "tools: answer now with what you found or did, and what is left undone."
)
CANCELLED = "The call was cancelled."
CONNECT_TIMEOUT_SECONDS = 10.0
ERROR_BODY_CHARS = 500


@dataclass
class Completion:
    """One assistant turn as it streamed in."""

    text: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)  # by index
    finish_reason: str | None = None

    def add(self, delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if isinstance(content, str):
            self.text += content
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            index = call.get("index", len(self.tool_calls))
            entry = self.tool_calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            entry["id"] = call.get("id") or entry["id"]
            function = call.get("function") or {}
            entry["name"] += function.get("name") or ""
            entry["arguments"] += function.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                }
                for call in self.calls()
            ]
        return message

    def calls(self) -> list[dict[str, Any]]:
        return [self.tool_calls[i] for i in sorted(self.tool_calls)]


class ChatRunner:
    """Runs sub-agents against the endpoint the config names (``tools.agents.endpoints``)."""

    name = "sidecar"

    async def run(self, request: TaskRequest, ctx: ToolContext) -> str:
        host, child = ctx.host, request.child
        try:
            endpoint = endpoint_for(host.config, child.agent, ctx.model)
        except Exception as error:
            raise SubagentFailed(str(error)) from None
        child.model = endpoint.ref
        request.metadata["model"] = endpoint.ref.to_wire()
        messages = child.history
        if not messages:
            messages.append({"role": "system", "content": system_prompt(ctx, request)})
        close_unanswered(messages)
        messages.append({"role": "user", "content": request.prompt})
        steps = child.agent.steps or DEFAULT_MAX_STEPS
        timeout = httpx.Timeout(endpoint.timeout_ms / 1000, connect=CONNECT_TIMEOUT_SECONDS)
        async with httpx.AsyncClient(timeout=timeout) as client:
            for step in range(steps):
                last = step == steps - 1
                if last:
                    messages.append({"role": "user", "content": LAST_STEP})
                tools = [] if last else self.tools(ctx, request)
                completion = await self.complete(client, endpoint, messages, tools, request)
                messages.append(completion.message())
                if not completion.tool_calls:
                    return completion.text
                for call in completion.calls():
                    result = await self.call_tool(ctx, request, call)
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": result.output}
                    )
                    if stops_the_loop(result, host.config.continue_loop_on_deny):
                        raise SubagentFailed(result.output)
        raise SubagentFailed(f"it did not finish within {steps} steps")

    def tools(self, ctx: ToolContext, request: TaskRequest) -> list[dict[str, Any]]:
        offered = ctx.host.offered(
            model=request.child.model,
            capabilities=ctx.editor.capabilities(),
            session_id=request.child.session_id,
        )
        return [
            {
                "type": "function",
                "function": {"name": t.id, "description": t.description, "parameters": t.schema},
            }
            for t in offered
        ]

    async def call_tool(
        self, ctx: ToolContext, request: TaskRequest, call: dict[str, Any]
    ) -> ToolResult:
        try:
            args: Any = json.loads(call["arguments"] or "{}")
        except ValueError:
            args = call["arguments"]  # the tool's validation says what is wrong
        return await ctx.host.execute(
            call["name"],
            args,
            editor=ctx.editor,
            session_id=request.child.session_id,
            call_id=call["id"] or None,
            agent=request.child.agent.name,
            model=request.child.model,
        )

    async def complete(
        self,
        client: httpx.AsyncClient,
        endpoint: Endpoint,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        request: TaskRequest,
    ) -> Completion:
        agent = request.child.agent
        body: dict[str, Any] = {"model": endpoint.model, "messages": messages, "stream": True}
        if tools:
            body["tools"] = tools
        if agent.temperature is not None:
            body["temperature"] = agent.temperature
        if agent.top_p is not None:
            body["top_p"] = agent.top_p
        headers = {"User-Agent": f"toolhost ({platform.system()})", **endpoint.headers}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        completion = Completion()
        try:
            async with client.stream("POST", endpoint.url, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    raise SubagentFailed(await http_error(response, endpoint))
                async for event in events(response):
                    for choice in event.get("choices") or []:
                        if isinstance(choice, dict):
                            completion.add(choice.get("delta") or {})
                            completion.finish_reason = (
                                choice.get("finish_reason") or completion.finish_reason
                            )
        except httpx.HTTPError as error:
            raise SubagentFailed(
                f"the model endpoint {endpoint.url} could not be reached "
                f"({type(error).__name__}: {error or 'no detail'})"
            ) from None
        return completion


async def events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream, up to ``[DONE]``."""
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if isinstance(event, dict):
            if isinstance(event.get("error"), dict):
                raise SubagentFailed(str(event["error"].get("message") or event["error"]))
            yield event


async def http_error(response: httpx.Response, endpoint: Endpoint) -> str:
    body = (await response.aread()).decode("utf-8", "replace")
    detail = body[:ERROR_BODY_CHARS]
    try:
        parsed = json.loads(body)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            detail = error["message"]
    except ValueError:
        pass
    return f"the model endpoint {endpoint.url} answered {response.status_code}: {detail}"


def stops_the_loop(result: ToolResult, continue_on_deny: bool) -> bool:
    """OpenCode stops an agent on a deny or a bare rejection (not on feedback)."""
    if not result.is_error or continue_on_deny:
        return False
    kind = result.metadata.get("error")
    if kind == "permission_denied":
        return True
    return kind == "permission_rejected" and not result.metadata.get("feedback")


def close_unanswered(messages: list[dict[str, Any]]) -> None:
    """A resumed conversation whose last tool calls never got results (the task was
    cancelled) gets them, so the endpoint accepts it."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "assistant":
            missing = [c for c in message.get("tool_calls") or [] if c["id"] not in answered]
            at = index + 1 + sum(1 for m in messages[index + 1 :] if m.get("role") == "tool")
            for offset, call in enumerate(missing):
                messages.insert(
                    at + offset,
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": "The call was cancelled.",
                    },
                )
            return


def system_prompt(ctx: ToolContext, request: TaskRequest) -> str:
    agent = request.child.agent
    intro = agent.prompt or (
        f"You are the {agent.name} sub-agent, started by another agent to do one task. "
        "Work autonomously with the tools you have. When you are done, answer with one "
        "final message that reports what you found or did: it is all the agent that "
        "started you will see."
    )
    return f"{intro}\n\nWorking directory: {ctx.directory}\nProject root: {ctx.worktree}"
