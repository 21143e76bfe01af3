"""``question``: ask the user multiple-choice questions in the editor (OpenCode 1.18.33).

The editor shows each question as a real prompt (``editor/question``: a pick list,
several picks when ``multiple``, and a "Type your own answer" entry) and answers with
one list of labels per question.  Listed only for clients that answer
``editor/question``.  Dismissing the prompt is a rejection that stops the agent, as in
OpenCode; a question left without an answer reads "Unanswered".
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.arguments.model import Arguments, as_json
from tools.context import ToolContext
from tools.errors import PermissionRejectedError
from tools.result import ToolResult
from tools.tool import Annotations, define

DISMISSED = "The user dismissed this question"


@dataclass(frozen=True, kw_only=True)
class QuestionOption(Arguments):
    label: str
    """Display text (1-5 words, concise)"""
    description: str
    """Explanation of choice"""


@dataclass(frozen=True, kw_only=True)
class QuestionPrompt(Arguments):
    question: str
    """Complete question"""
    header: str
    """Very short label (max 30 chars)"""
    options: list[QuestionOption]
    """Available choices"""
    multiple: bool | None = None
    """Allow selecting multiple choices"""


@dataclass(frozen=True, kw_only=True)
class QuestionParams(Arguments):
    questions: list[QuestionPrompt]
    """Questions to ask"""


def answered(questions: list[QuestionPrompt], answers: list[list[str]]) -> str:
    """OpenCode's words for the answers, one ``"question"="a, b"`` pair per question."""
    given = [*answers, *([[]] * (len(questions) - len(answers)))]
    pairs = [
        f'"{q.question}"="{", ".join(labels) if labels else "Unanswered"}"'
        for q, labels in zip(questions, given, strict=False)
    ]
    return (
        f"User has answered your questions: {', '.join(pairs)}. "
        "You can now continue with the user's answers in mind."
    )


async def ask(args: QuestionParams, ctx: ToolContext) -> ToolResult:
    # Only a deny stops it here: asking the user is what the tool does.
    ctx.host.permissions.needs_person(
        ctx.agent, "question", ["*"], policy=ctx.host.policy_for(ctx.session_id)
    )
    request = {
        "sessionID": ctx.session_id,
        "callID": ctx.call_id,
        "questions": [{**as_json(q), "custom": True} for q in args.questions],
    }
    answers = await ctx.editor.ask_questions(request)
    if answers is None:
        raise PermissionRejectedError(DISMISSED)
    count = len(args.questions)
    return ToolResult(
        title=f"Asked {count} question{'s' if count > 1 else ''}",
        output=answered(args.questions, answers),
        metadata={"answers": answers},
    )


tool = define(
    "question",
    parameters=QuestionParams,
    execute=ask,
    kind="other",
    annotations=Annotations(read_only=True),
    requires={"question"},
)
