"""Claims, verified citations and reconciliation over the API (issue 12, A1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.validation.services import validation_run
from tasks_app.models import ToolEvidence
from tests.evidence_app.validation_helpers import validating_task

pytestmark = pytest.mark.django_db


def _judged(settings: Any, owner: Any, answer: str) -> Any:
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        owner=owner,
        answer=answer,
        evidence=["Intro. The annual training budget per employee is 1,750 EUR. More text."],
        request="What is the annual training budget per employee?",
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    return task, snapshot


def test_validation_detail_carries_claims_with_verified_offsets_and_reasons(
    alice: Client, requester: Any, settings: Any
) -> None:
    """Issue 12: GET /validations/{id} has claims (verified flag, evidence id, offsets),
    requirement coverage, the model's verdict and the reconciliation reasons."""
    task, snapshot = _judged(
        settings, requester, "The annual training budget per employee is 1,750 EUR."
    )

    body = alice.get(f"/api/v1/validations/{snapshot.pk}").json()

    assert body["status"] == "accepted" and body["model_status"] == "accepted"
    assert body["reconciliation"] == ["accepted: every claim has verified support"]
    claim = body["claims"][0]
    assert claim["verdict"] == "supported"
    citation = claim["citations"][0]
    assert citation["verified"] is True and citation["ref"] == "R1"
    content = ToolEvidence.objects.get(pk=citation["evidence_id"]).content
    assert content[citation["start"] : citation["end"]] == citation["quote"]
    assert body["requirements"] == [
        {
            "text": "What is the annual training budget per employee",
            "met": "yes",
            "claim_ids": ["1"],
        }
    ]
    assert body["claim_summary"]["supported"] == 1


def test_validation_list_carries_the_claim_summary(
    alice: Client, requester: Any, settings: Any
) -> None:
    """Issue 12: list endpoints carry supported / contradicted / unsupported counts and
    the first claim that is not supported."""
    task, _ = _judged(settings, requester, "The annual training budget per employee is 2,000 EUR.")

    item = alice.get(f"/api/v1/tasks/{task.pk}/validations").json()["items"][0]

    assert item["status"] == "rejected"
    summary = item["claim_summary"]
    assert (summary["supported"], summary["contradicted"], summary["unsupported"]) == (0, 1, 0)
    assert summary["first_problem"]["verdict"] == "contradicted"
    assert "2,000 EUR" in summary["first_problem"]["text"]


def test_task_latest_validation_and_task_list_carry_claims(
    alice: Client, requester: Any, settings: Any
) -> None:
    """Issue 12: latest_validation on a task carries claims, requirement coverage, the
    model's verdict and reasons; the task list carries the claim summary."""
    task, snapshot = _judged(
        settings, requester, "The annual training budget per employee is 1,750 EUR."
    )

    detail = alice.get(f"/api/v1/tasks/{task.pk}").json()["latest_validation"]
    listed = alice.get("/api/v1/tasks").json()["items"][0]["latest_validation"]

    assert detail["id"] == snapshot.pk
    assert detail["model_status"] == "accepted" and detail["status"] == "accepted"
    assert detail["claims"][0]["citations"][0]["verified"] is True
    assert detail["claims"][0]["citations"][0]["evidence_id"] is not None
    assert detail["requirements"][0]["met"] == "yes"
    assert detail["reconciliation"]
    assert listed["claim_summary"] == {
        "supported": 1,
        "contradicted": 0,
        "unsupported": 0,
        "disputed": 0,
        "total": 1,
        "unverified_citations": 0,
        "first_problem": None,
    }
    assert "claims" not in listed
