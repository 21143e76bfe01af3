"""``task``: start a sub-agent in a child session (OpenCode 1.18.33's ``tool/task.ts``).

Order as in 1.18.33: the depth limit (``subagent_depth``, default 1), the ``task``
permission for ``subagent_type``, the agent must exist, then the child session (new,
or the one ``task_id`` names) runs on the runner this client has
(``tools.agents.runner``) and the last text comes back in 1.18.33's envelope::

    <task id="ses_…" state="completed">
    <task_result>
    …
    </task_result>
    </task>

A failure is ``Subagent failed (task_id: ses_…): why``.  The child's rules are the
intersection of the caller's and the sub-agent's (``tools.agents.policy``); its tool
calls stream as this call's progress (``metadata.calls``) and are cancelled with it.
Listed only where a runner exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.agents import runner as runners
from tools.agents.catalog import describe_subagents, listed_subagents
from tools.agents.children import Child, ChildRun
from tools.agents.policy import combine
from tools.agents.requests import SubagentFailed, TaskRequest
from tools.arguments.model import Arguments
from tools.builtin import listed
from tools.context import ToolContext
from tools.errors import ToolError
from tools.result import ToolResult
from tools.tool import Annotations, Caller, define

if TYPE_CHECKING:
    from tools.context import Host


@dataclass(frozen=True, kw_only=True)
class TaskParams(Arguments):
    description: str
    """A short (3-5 words) description of the task"""
    prompt: str
    """The task for the agent to perform"""
    subagent_type: str
    """The type of specialized agent to use for this task"""
    task_id: str | None = None
    """This should only be set if you mean to resume a previous task (you can pass a prior
    task_id and the task will continue the same subagent session as before instead of creating a
    fresh one)"""
    command: str | None = None
    """The command that triggered this task"""


def envelope(session_id: str, state: str, text: str, summary: str | None = None) -> str:
    """OpenCode 1.18.33's task output."""
    tag = "task_error" if state == "error" else "task_result"
    lines = [f'<task id="{session_id}" state="{state}">']
    if summary:
        lines.append(f"<summary>{summary}</summary>")
    return "\n".join([*lines, f"<{tag}>", text, f"</{tag}>", "</task>"])


def describe(base: str, host: Host, caller: Caller) -> str:
    policy = host.policy_for(caller.session_id)

    def task_action(name: str) -> str:
        if policy is not None:
            return policy.decide("task", name).action
        return combine("task", name, [host.permissions.ruleset(caller.agent)]).action

    listed = listed_subagents(host.agents.values(), task_action)
    return f"{base}\n\n{describe_subagents(listed)}"


def child_for(args: TaskParams, ctx: ToolContext) -> tuple[Child, bool]:
    """The child session ``task_id`` names (resumed), else a new one."""
    host = ctx.host
    agent = host.agents[args.subagent_type]
    child = host.children.get(args.task_id) if args.task_id else None
    if child is not None:
        if child.run is not None:
            raise ToolError(
                f"The task {child.session_id} is still running; wait for its result before "
                "resuming it."
            )
        # The caller may have changed: the child is judged against this one now.
        child.parent_session_id, child.parent_agent = ctx.session_id, ctx.agent
        child.depth = host.depth_of(ctx.session_id) + 1
        child.agent = agent
        return child, True
    title = f"{args.description} (@{agent.name} subagent)"
    return host.new_child(ctx.session_id, ctx.agent, agent, title, agent.model or ctx.model), False


async def run_task(args: TaskParams, ctx: ToolContext) -> ToolResult:
    host = ctx.host
    limit = host.subagent_depth
    if host.depth_of(ctx.session_id) >= limit:
        raise ToolError(
            f'Subagent depth limit reached ({limit}). Increase "subagent_depth" to allow '
            "nested subagents."
        )
    await ctx.ask(
        "task",
        [args.subagent_type],
        ["*"],
        {"description": args.description, "subagent_type": args.subagent_type},
    )
    if args.subagent_type not in host.agents:
        raise ToolError(f"Unknown agent type: {args.subagent_type} is not a valid agent type")
    runner = runners.choose(host, ctx.editor.capabilities())
    if runner is None:
        raise ToolError(runners.NO_RUNNER)
    child, resumed = child_for(args, ctx)
    model = child.agent.model or ctx.model
    request = TaskRequest(
        child=child,
        description=args.description,
        prompt=args.prompt,
        resume=resumed,
        command=args.command,
        metadata={
            "parentSessionId": ctx.session_id,
            "sessionId": child.session_id,
            "model": model.to_wire() if model else None,
            "agent": child.agent.name,
            "runner": runner.name,
        },
    )
    run = ChildRun(ctx, args.description, request.metadata)
    with child.running(run):
        run.report()
        try:
            text = await runner.run(request, ctx)
        except SubagentFailed as error:
            raise ToolError(
                f"Subagent failed (task_id: {child.session_id}): {error}",
                metadata=run.progress(),
            ) from None
    return ToolResult(
        title=args.description,
        output=envelope(child.session_id, "completed", text),
        metadata=run.progress(),
    )


tool = define(
    "task",
    parameters=TaskParams,
    execute=run_task,
    kind="other",
    annotations=Annotations(destructive=True, open_world=True),
    describe=describe,
    available=listed.task,
)
