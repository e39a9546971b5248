"""Fixtures for the review UI tests: a task in needs_review with a full evidence trail."""

from __future__ import annotations

from typing import Any

import pytest

from tasks_app.models import TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import (
    RunFactory,
    RunMessageFactory,
    TaskFactory,
    ToolEvidenceFactory,
    ValidationSnapshotFactory,
)

FACT = "The annual training budget per employee is 1,800 EUR."


def make_reviewable_task(
    owner: Any, *, title: str = "Training budget question", **kwargs: Any
) -> Any:
    """A task that went open → running → validating → needs_review, with one run, two
    tool results, a transcript and an insufficient_evidence verdict."""
    task = TaskFactory(
        owner=owner,
        title=title,
        status=S.NEEDS_REVIEW,
        attempt_count=1,
        version=3,
        request="What is the annual training budget per employee?",
        rules="Cite the handbook section.",
        final_answer="It is 1,800 EUR per employee per year (handbook 18).",
        **kwargs,
    )
    for i, (a, b) in enumerate(
        [(S.OPEN, S.RUNNING), (S.RUNNING, S.VALIDATING), (S.VALIDATING, S.NEEDS_REVIEW)]
    ):
        TaskEvent.objects.create(
            task=task,
            from_status=a,
            to_status=b,
            actor_kind="system",
            reason=f"step {i}",
            attempt_index=1,
        )
    run = RunFactory(
        task=task, attempt_index=1, model_name="offline:researcher", output_text=task.final_answer
    )
    RunMessageFactory(run=run, index=0, role="user", content=task.request)
    RunMessageFactory(run=run, index=1, role="assistant", content=task.final_answer)
    ToolEvidenceFactory(
        run=run,
        sequence=0,
        tool_name="search_documents",
        arguments={"query": "training budget"},
        content="18-training-budget.md: Training budget",
    )
    ToolEvidenceFactory(
        run=run,
        sequence=1,
        tool_name="read_document",
        arguments={"document_id": 18},
        title="Training budget",
        content=FACT,
    )
    ValidationSnapshotFactory(
        task=task,
        attempt_index=1,
        status="insufficient_evidence",
        score=0.4,
        failure_category="unsupported_claim",
        result={
            "status": "insufficient_evidence",
            "score": 0.4,
            "issues": ["The section number is not in the evidence."],
            "missing_requirements": ["cite the section"],
            "evidence_gaps": ["handbook section 18 heading"],
            "recommended_revision_prompt": "Quote the section heading.",
            "failure_category": "unsupported_claim",
            "reasoning": "The amount is supported by R2; the section citation is not.",
        },
        rendered_input="USER REQUEST\nWhat is the annual training budget?\n\n[R2] read_document\n"
        + FACT
        + "\n\nANSWER\n"
        + task.final_answer,
        system_prompt="You are a strict validator. Return only JSON.",
        raw_responses=['{"status": "insufficient_evidence", "score": 0.4}'],
        template_name="default",
        template_version="default@abc123",
        model_name="offline:judge",
    )
    return task


@pytest.fixture
def review_task(requester: Any) -> Any:
    return make_reviewable_task(requester)
