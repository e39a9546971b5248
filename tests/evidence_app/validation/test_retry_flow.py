"""V2 with the runtime: rejected → needs_revision → attempt 2 carries the validator's
feedback → accepted → awaiting_feedback. Jobs are called in-process here; the real
worker version is tests/evidence_app/validation/test_pipeline_e2e.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.jobs import validate_attempt_job
from evidence_app.models import ValidationSnapshot
from project.llm.registry import register_model, unregister_model
from tasks_app.jobs import run_attempt_job
from tests.factories import KnowledgeDocumentFactory, TaskFactory

AGENT = "test:stubborn-agent"


class Agent:
    """Reads one document, then answers; gets the figure right only when the prompt
    carries the validator's feedback."""

    def __init__(self, document_id: int) -> None:
        self.document_id = document_id
        self.prompts: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        prompt = next(
            p.content
            for p in first.parts
            if isinstance(p, UserPromptPart) and isinstance(p.content, str)
        )
        read = any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", []))
        if not read and info.function_tools:
            self.prompts.append(prompt)
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        "read_document", {"document_id": self.document_id}, tool_call_id="r1"
                    )
                ]
            )
        if "Validator feedback on the previous answer" in prompt and "1,750 EUR" in prompt:
            return ModelResponse(
                parts=[TextPart("The annual training budget per employee is 1,750 EUR.")]
            )
        return ModelResponse(
            parts=[TextPart("The annual training budget per employee is 2,000 EUR.")]
        )


@pytest.fixture
def agent(settings: Any) -> Iterator[Agent]:
    document = KnowledgeDocumentFactory(
        title="Training Budget",
        body="Everyone can learn here. The annual training budget per employee is 1,750 EUR.",
    )
    stub = Agent(document.pk)
    register_model(AGENT, lambda: FunctionModel(stub, model_name=AGENT))
    settings.AGENT_MODEL = AGENT
    settings.VALIDATOR_MODEL = "offline:judge"
    yield stub
    unregister_model(AGENT)


@pytest.mark.django_db
def test_rejected_attempt_is_retried_with_feedback_and_then_accepted(
    agent: Agent, django_capture_on_commit_callbacks: Any
) -> None:
    """V2: rejected on attempt 1 → needs_revision → attempt 2 prompt has the categorized
    feedback and recommended revision, wrapped → accepted → awaiting_feedback."""
    task = TaskFactory(request="What is the annual training budget per employee?", max_attempts=2)

    assert run_attempt_job(task.pk) == "validating"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert validate_attempt_job(task.pk, 1) == "rejected"
    task.refresh_from_db()
    assert task.status == "needs_revision"
    assert len(callbacks) == 1  # the next attempt is queued after commit
    first = ValidationSnapshot.objects.get(task=task, attempt_index=1)
    assert first.result["failure_category"] == "unsupported_claim"
    assert "1,750 EUR" in first.result["issues"][0]

    assert run_attempt_job(task.pk) == "validating"
    second_prompt = agent.prompts[-1]
    feedback_at = second_prompt.index("Validator feedback on the previous answer")
    feedback_block = second_prompt[feedback_at:]
    assert feedback_block.index("<EXTERNAL-CONTENT") < feedback_block.index("unsupported_claim")
    assert first.result["recommended_revision_prompt"][:40] in second_prompt

    assert validate_attempt_job(task.pk, 2) == "accepted"
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"
    assert task.validation_outcome == "accepted"
    assert task.attempt_count == 2
    second = ValidationSnapshot.objects.get(task=task, attempt_index=2)
    # The validator of attempt 2 saw its own earlier feedback, wrapped, before the answer.
    assert "== PREVIOUS VALIDATOR FEEDBACK ==" in second.rendered_input
    assert "Attempt 1: rejected" in second.rendered_input
    assert second.rendered_input.index("Attempt 1: rejected") < second.rendered_input.index(
        "== ANSWER UNDER REVIEW"
    )
    # The first answer is in the conversation history.
    assert "2,000 EUR" in second.rendered_input.split("== RECENT CONVERSATION HISTORY ==")[1]


@pytest.mark.django_db
def test_rejected_on_last_attempt_goes_to_needs_review(agent: Agent) -> None:
    """V2: no attempts left, usable answer → a person decides."""
    task = TaskFactory(request="What is the annual training budget per employee?", max_attempts=1)
    run_attempt_job(task.pk)
    assert validate_attempt_job(task.pk, 1) == "rejected"
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert task.final_answer.endswith("2,000 EUR.")
