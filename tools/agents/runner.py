"""Who runs a sub-agent's loop, chosen by what is there.

1. The editor, when its client answers ``agent/task`` (``initializationOptions.editor
   .task``): VS Code runs the loop on the user's own chat models, Neovim hands it to
   the agent plugin's hook.  Its tool calls come back as ``tools/execute`` in the
   child session, so the child's rules apply to them.
2. The sidecar itself, when the config names an OpenAI-compatible endpoint
   (``tools.agents.chat``).
3. Neither: ``task`` is not listed, and a call to it says to use the agent's own
   sub-agents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.agents import endpoints
from tools.agents.requests import Runner, SubagentFailed, TaskRequest

if TYPE_CHECKING:
    from tools.context import Host, ToolContext

NO_RUNNER = (
    "task cannot start a sub-agent here: this editor does not run sub-agents and no model "
    "endpoint is configured for the sidecar (provider.<id>.options.baseURL in your user "
    "config). Use your own sub-agents if you have them, or do the work yourself with the "
    "other tools."
)


class EditorRunner:
    """``agent/task``: the editor runs the loop and calls back with ``tools/execute``."""

    name = "editor"

    async def run(self, request: TaskRequest, ctx: ToolContext) -> str:
        child, agent = request.child, request.child.agent
        params: dict[str, Any] = {
            "sessionID": child.session_id,
            "parentSessionID": child.parent_session_id,
            "callID": ctx.call_id,
            "description": request.description,
            "prompt": request.prompt,
            "subagentType": agent.name,
            "resume": request.resume,
            "agent": {
                "name": agent.name,
                "description": agent.description,
                "prompt": agent.prompt,
                "model": agent.model.to_wire() if agent.model else None,
                "steps": agent.steps,
                "temperature": agent.temperature,
            },
            "model": ctx.model.to_wire() if ctx.model else None,
        }
        if request.command:
            params["command"] = request.command
        from tools.errors import ToolError

        try:
            return await ctx.editor.run_task(params)
        except ToolError as error:
            raise SubagentFailed(error.message) from None


def choose(host: Host, capabilities: frozenset[str]) -> Runner | None:
    """The runner for this client; None where there is none (task is then not listed:
    ``tools.builtin.listed.task`` asks the same two questions)."""
    if "task" in capabilities:
        return EditorRunner()
    if endpoints.configured(host.config):
        from tools.agents.chat import ChatRunner

        return ChatRunner()
    return None
