"""Claim labels through the API (issue 27, item 4): the feedback endpoint stays in
tasks_app, so labels go to ``POST /tasks/{id}/claim-labels``, tied to the caller's own
pending (or applied) decision; checked as a whole, given once, never for an undone one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.models import ClaimLabel, ValidationSnapshot
from evidence_app.trust.claim_agreement import claim_agreement_stats
from tasks_app.models import Feedback, Task
from tasks_app.workflow.states import TaskStatus as S
from tests.api.test_tasks_api import post
from tests.factories import TaskFactory, ToolEvidenceFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db

CLAIMS = [
    {"id": "1", "text": "The budget is 1,800 EUR.", "verdict": "supported"},
    {"id": "2", "text": "It is paid yearly.", "verdict": "unsupported"},
]


@pytest.fixture(autouse=True)
def window(settings: Any) -> None:
    settings.DECISION_UNDO_SECONDS = 30


def reviewable(owner: Any) -> Task:
    task = TaskFactory(owner=owner, status=S.NEEDS_REVIEW, attempt_count=1, version=3)
    ValidationSnapshotFactory(
        task=task, attempt_index=1, status="insufficient_evidence", result={"claims": CLAIMS}
    )
    return task


def url(task: Task) -> str:
    return f"/api/v1/tasks/{task.pk}/claim-labels"


def test_labels_join_the_pending_decision_and_count_once_it_applies(
    alice: Client, requester: Any
) -> None:
    """Issue 27, item 4: decide, then label: the labels belong to the pending decision
    (validator's verdict copied, corrected citation kept) and count once it applies."""
    task = reviewable(requester)
    evidence = ToolEvidenceFactory(run__task=task, run__attempt_index=1)
    assert (
        post(
            alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30}
        ).status_code
        == 200
    )
    response = post(
        alice,
        url(task),
        {
            "claims": [
                {"claim_index": 0, "label": "supported"},
                {
                    "claim_index": 1,
                    "label": "contradicted",
                    "corrected_citation": {"evidence_id": evidence.pk, "quote": "monthly"},
                },
            ]
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    decision = Feedback.objects.get(task=task)
    assert (body["feedback_id"], body["decision_state"], body["count"]) == (
        decision.pk,
        "pending",
        2,
    )
    assert body["validation_id"] == ValidationSnapshot.objects.get(task=task).pk
    assert body["items"][1] == {
        "claim_index": 1,
        "claim_text": "It is paid yearly.",
        "label": "contradicted",
        "judge_verdict": "unsupported",
        "corrected_citation": {"evidence_id": evidence.pk, "quote": "monthly"},
    }
    assert claim_agreement_stats() == []  # pending: not yet counted
    Feedback.objects.filter(pk=decision.pk).update(state="applied")
    assert claim_agreement_stats()[0].count == 2

    again = post(
        alice,
        url(task),
        {"feedback_id": decision.pk, "claims": [{"claim_index": 0, "label": "unsupported"}]},
    )
    assert again.status_code == 409 and "already labelled" in again.json()["detail"]
    assert ClaimLabel.objects.count() == 2


def test_a_bad_entry_refuses_the_whole_set(alice: Client, requester: Any) -> None:
    """Issue 27, item 4: an index the validation does not have, or another task's
    evidence, refuses everything (422) and writes nothing."""
    task = reviewable(requester)
    foreign = ToolEvidenceFactory()
    post(alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30})
    for claims in (
        [{"claim_index": 0, "label": "supported"}, {"claim_index": 5, "label": "supported"}],
        [
            {
                "claim_index": 0,
                "label": "supported",
                "corrected_citation": {"evidence_id": foreign.pk, "quote": "x"},
            }
        ],
    ):
        response = post(alice, url(task), {"claims": claims})
        assert response.status_code == 422, response.content
    bad_label = post(alice, url(task), {"claims": [{"claim_index": 0, "label": "maybe"}]})
    assert bad_label.status_code == 422
    assert not ClaimLabel.objects.exists()


def test_no_pending_decision_an_undone_one_or_someone_elses_is_refused(
    alice: Client, rita: Client, requester: Any
) -> None:
    """Issue 27, item 4: without a pending decision 404; a reviewer cannot label the
    requester's decision (403); an undone decision's labels would not count (409)."""
    task = reviewable(requester)
    labels = {"claims": [{"claim_index": 0, "label": "supported"}]}
    assert post(alice, url(task), labels).status_code == 404
    decided = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30}
    ).json()
    assert post(rita, url(task), labels).status_code == 403
    feedback_id = decided["pending_decision"]["id"]
    assert post(alice, decided["pending_decision"]["undo_url"]).status_code == 200
    refused = post(alice, url(task), {**labels, "feedback_id": feedback_id})
    assert refused.status_code == 409 and "undone" in refused.json()["detail"]
    assert not ClaimLabel.objects.exists()
