"""A decision with its claim labels through the API, in one request (issue 45, item 1):
``POST /tasks/{id}/feedback`` takes the same ``claims`` the task page sends, and the page
and the endpoint call the same domain operation (``task_decide``), so a decision and its
labels are stored together or not at all."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.models import ClaimLabel, ValidationSnapshot
from tasks_app.models import Feedback, Task
from tasks_app.workflow.states import TaskStatus as S
from tests.api.test_tasks_api import post
from tests.factories import TaskFactory, ToolEvidenceFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db

CLAIMS = [
    {"id": "1", "text": "The budget is 1,800 EUR.", "verdict": "supported"},
    {"id": "2", "text": "It is paid yearly.", "verdict": "unsupported"},
]


def reviewable(owner: Any) -> tuple[Task, ValidationSnapshot]:
    task = TaskFactory(owner=owner, status=S.NEEDS_REVIEW, attempt_count=1, version=3)
    snapshot = ValidationSnapshotFactory(
        task=task, attempt_index=1, status="insufficient_evidence", result={"claims": CLAIMS}
    )
    return task, snapshot


def feedback(task: Task) -> str:
    return f"/api/v1/tasks/{task.pk}/feedback"


def nothing_written(task: Task) -> None:
    """The refused request left the task as it was: no decision, no label."""
    task.refresh_from_db()
    assert (task.status, task.version) == (S.NEEDS_REVIEW, 3)
    assert not Feedback.objects.filter(task=task).exists()
    assert not ClaimLabel.objects.filter(task_id=task.pk).exists()


def test_a_decision_with_claim_labels_stores_both_in_one_request(
    alice: Client, requester: Any
) -> None:
    """Issue 45, item 1: one request decides and labels: the task moves, and the labels
    belong to that decision and to the validation it was taken on, the corrected
    citation kept; nothing else is needed (no second request to claim-labels)."""
    task, snapshot = reviewable(requester)
    evidence = ToolEvidenceFactory(run__task=task, run__attempt_index=1)
    response = post(
        alice,
        feedback(task),
        {
            "action": "satisfied",
            "validation_id": snapshot.pk,
            "claims": [
                {"claim_index": 0, "label": "supported"},
                {
                    "claim_index": 1,
                    "label": "contradicted",
                    "corrected_citation": {"evidence_id": evidence.pk, "quote": "monthly"},
                },
            ],
        },
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == S.CLOSED
    decision = Feedback.objects.get(task=task)
    assert (decision.action, decision.state, decision.author) == ("satisfied", "applied", requester)
    stored = ClaimLabel.objects.filter(feedback=decision).order_by("claim_index")
    assert [
        (row.snapshot_id, row.claim_index, row.label, row.judge_verdict, row.corrected_citation)
        for row in stored
    ] == [
        (snapshot.pk, 0, "supported", "supported", {}),
        (
            snapshot.pk,
            1,
            "contradicted",
            "unsupported",
            {"evidence_id": evidence.pk, "quote": "monthly"},
        ),
    ]
    assert {row.author for row in stored} == {requester}


def test_a_refused_label_refuses_the_decision_and_writes_nothing(
    alice: Client, requester: Any
) -> None:
    """Issue 45, item 1: a label the validation cannot take (a claim it does not have, a
    claim labelled twice, another task's evidence, an unknown label) answers 422, and
    neither the decision nor any label is stored: the task is as it was."""
    task, _ = reviewable(requester)
    foreign = ToolEvidenceFactory()
    for claims in (
        [{"claim_index": 0, "label": "supported"}, {"claim_index": 5, "label": "supported"}],
        [{"claim_index": 1, "label": "supported"}, {"claim_index": 1, "label": "unsupported"}],
        [
            {
                "claim_index": 0,
                "label": "supported",
                "corrected_citation": {"evidence_id": foreign.pk, "quote": "x"},
            }
        ],
        [{"claim_index": 0, "label": "maybe"}],
    ):
        response = post(alice, feedback(task), {"action": "satisfied", "claims": claims})
        assert response.status_code == 422, (claims, response.content)
        nothing_written(task)


def test_labels_of_another_validation_or_a_decision_the_task_cannot_take_answer_409(
    alice: Client, requester: Any
) -> None:
    """Issue 45, item 1: labels of a validation that is no longer the task's latest, or
    a decision the task's status refuses, answer 409, and neither the decision nor its
    labels are stored."""
    task, seen = reviewable(requester)
    ValidationSnapshotFactory(task=task, attempt_index=1, result={"claims": CLAIMS})
    labels = {"claims": [{"claim_index": 0, "label": "supported"}]}
    stale = post(alice, feedback(task), {"action": "satisfied", "validation_id": seen.pk, **labels})
    assert stale.status_code == 409, stale.content
    assert "Reload" in stale.json()["detail"]
    nothing_written(task)

    Task.objects.filter(pk=task.pk).update(status=S.RUNNING)
    wrong_state = post(alice, feedback(task), {"action": "satisfied", **labels})
    assert wrong_state.status_code == 409, wrong_state.content
    assert not Feedback.objects.filter(task=task).exists()
    assert not ClaimLabel.objects.filter(task_id=task.pk).exists()


def test_a_retry_with_the_same_key_stores_the_labels_once(alice: Client, requester: Any) -> None:
    """Issue 45, item 1: the decision with its labels is one idempotent write: a retry
    with the same Idempotency-Key gets the first answer back and stores nothing again."""
    task, _ = reviewable(requester)
    body = {
        "action": "revise",
        "comment": "Use the 2026 figure.",
        "claims": [{"claim_index": 0, "label": "contradicted"}],
    }
    first = alice.post(
        feedback(task), body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-45"
    )
    again = alice.post(
        feedback(task), body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-45"
    )
    assert first.status_code == again.status_code == 200, first.content
    assert again["Idempotent-Replayed"] == "true"
    assert Feedback.objects.filter(task=task).count() == 1
    assert list(ClaimLabel.objects.values_list("claim_index", "label")) == [(0, "contradicted")]
