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


def verdict(status: str, **extra: Any) -> str:
    return json.dumps({"status": status, "score": 1.0 if status == "accepted" else 0.2, **extra})


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
    """Replies in order; a callable reply is called with the messages; an exception is raised."""

    replies: list[Any] = field(default_factory=list)
    calls: list[list[ModelMessage]] = field(default_factory=list)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(list(messages))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        return ModelResponse(parts=[TextPart(reply)])

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond, model_name=JUDGE)

    def factory(self) -> Callable[[], FunctionModel]:
        return self.model
