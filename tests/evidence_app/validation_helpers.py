"""Helpers for validator tests: a task waiting in ``validating`` and a scripted judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tasks_app.models import Task
from tests.factories import RunFactory, TaskFactory, ToolEvidenceFactory

JUDGE = "test:judge"


# The default evidence's fact, quoted as a scripted judge cites it (issue 12).
DEFAULT_QUOTE = "The annual training budget per employee is 1,750 EUR."


def grounded(status: str, *, quote: str = DEFAULT_QUOTE, ref: str = "R1") -> dict[str, Any]:
    """Claims and requirements that make a scripted ``accepted`` (one supported claim
    citing ``quote`` in ``ref``) or ``rejected`` (one contradicted claim) stand after
    citation verification and reconciliation."""
    claim_verdict = "supported" if status == "accepted" else "contradicted"
    return {
        "claims": [
            {
                "id": "1",
                "text": "the answer",
                "verdict": claim_verdict,
                "citations": [{"ref": ref, "quote": quote}],
            }
        ],
        "requirements": [{"text": "the request", "met": "yes", "claim_ids": ["1"]}],
    }


def verdict(status: str, **extra: Any) -> str:
    """A scripted verdict; ``accepted`` and ``rejected`` cite the default evidence unless
    ``claims``/``requirements`` are given (pass ``claims=[]`` for a bare verdict)."""
    body: dict[str, Any] = {"status": status, "score": 1.0 if status == "accepted" else 0.2}
    if status in ("accepted", "rejected"):
        body.update(grounded(status))
    return json.dumps({**body, **extra})


def validating_task(
    *,
    answer: str = "The annual training budget per employee is 1,750 EUR.",
    evidence: list[str] | None = None,
    attempt: int = 1,
    max_attempts: int = 2,
    **task_fields: Any,
) -> Task:
    """A task whose attempt ``attempt`` produced ``answer`` and now awaits validation.

    (Test setup writes the status directly; production code only uses task_transition.)
    """
    task = TaskFactory(
        status="validating",
        attempt_count=attempt,
        max_attempts=max_attempts,
        final_answer=answer,
        **task_fields,
    )
    run = RunFactory(task=task, attempt_index=attempt, output_text=answer)
    for i, content in enumerate(
        evidence
        if evidence is not None
        else ["The annual training budget per employee is 1,750 EUR."]
    ):
        ToolEvidenceFactory(run=run, sequence=i, content=content, tool_name="read_document")
    return task


@dataclass
class ScriptedJudge:
    """Replies in order; a callable reply is called with the messages; an exception is
    raised; a ModelResponse is returned as it is."""

    replies: list[Any] = field(default_factory=list)
    calls: list[list[ModelMessage]] = field(default_factory=list)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(list(messages))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, ModelResponse):
            return reply
        return ModelResponse(parts=[TextPart(reply)])

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, model_name=JUDGE)

    def factory(self) -> Callable[[], FunctionModel]:
        return self.model
