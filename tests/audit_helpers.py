"""Audits for tests (issue 27): a verdict drawn at rate 1 by the real validation service
with a scripted judge, so the audit, its snapshot and its claims are the product's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.test import override_settings

from evidence_app.models import Audit
from evidence_app.validation.services import validation_run
from project.llm.registry import register_model, unregister_model
from tests.evidence_app.validation_helpers import (
    DEFAULT_QUOTE,
    JUDGE,
    ScriptedJudge,
    validating_task,
)

ANSWER = "The annual training budget per employee is 1,750 EUR. It is paid once a year."


def two_claim_verdict(status: str) -> str:
    """An accepted (or rejected) verdict whose answer the validator split in two claims."""
    claim = "supported" if status == "accepted" else "contradicted"
    return json.dumps(
        {
            "status": status,
            "score": 0.93 if status == "accepted" else 0.2,
            "claims": [
                {
                    "id": "1",
                    "text": "The budget is 1,750 EUR per employee",
                    "verdict": claim,
                    "citations": [{"ref": "R1", "quote": DEFAULT_QUOTE}],
                },
                {
                    "id": "2",
                    "text": "It is paid once a year",
                    "verdict": claim,
                    "citations": [{"ref": "R1", "quote": DEFAULT_QUOTE}],
                },
            ],
            "requirements": [{"text": "the request", "met": "yes", "claim_ids": ["1", "2"]}],
        }
    )


@contextmanager
def scripted_validator() -> Iterator[ScriptedJudge]:
    judge = ScriptedJudge()
    register_model(JUDGE, judge.factory())
    try:
        with override_settings(
            VALIDATOR_MODEL=JUDGE, MODEL_MAX_RETRIES=0, MODEL_RETRY_BASE_DELAY_SECONDS=0
        ):
            yield judge
    finally:
        unregister_model(JUDGE)


def drawn_audit(status: str = "accepted", **task_fields: Any) -> Audit:
    """Validate a fresh task with a scripted ``status`` verdict at audit rate 1: the
    verdict moves the task and is drawn for an audit in the same transaction."""
    with (
        scripted_validator() as judge,
        override_settings(AUDIT_RATE=1.0, AUDIT_REJECT_RATE=1.0),
    ):
        judge.replies = [two_claim_verdict(status)]
        task = validating_task(answer=ANSWER, **task_fields)
        validation_run(task_id=task.pk, attempt_index=task.attempt_count)
    return Audit.objects.select_related("snapshot", "task").get(task=task)
