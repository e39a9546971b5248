"""The feedback endpoint's undo window (issue 26 items 1 and 6): the answer says when the
decision applies and where to undo it; the undo endpoint; the task's status and
last_decision never count a pending or undone decision; comments on satisfied and
abandon reach the API and the webhooks."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from tasks_app.models import DecisionState, Feedback, Task, WebhookDelivery
from tasks_app.notifications.webhooks import webhook_endpoint_create
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.api.test_tasks_api import post
from tests.factories import TaskFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def window(settings: Any) -> int:
    settings.DECISION_UNDO_SECONDS = 30
    settings.WEBHOOK_ALLOW_PRIVATE = True
    return 30


def reviewable(owner: Any) -> Task:
    task = TaskFactory(owner=owner, status=S.NEEDS_REVIEW, attempt_count=1, version=3)
    ValidationSnapshotFactory(task=task, attempt_index=1, status="insufficient_evidence")
    return task


def test_feedback_answers_a_pending_decision_and_its_undo_url(
    window: int, alice: Client, requester: Any
) -> None:
    """Issue 26 item 1: the answer keeps the task's status, and pending_decision says
    when it applies and where to undo it; the undo answers the task with no pending
    decision and no last decision, and a second undo is a 409."""
    task = reviewable(requester)
    response = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["version"], body["last_decision"]) == (S.NEEDS_REVIEW, 3, None)
    pending = body["pending_decision"]
    feedback = Feedback.objects.get(task=task)
    assert pending["id"] == feedback.pk and pending["action"] == "satisfied"
    assert 29 <= pending["seconds_left"] <= 30
    assert pending["undo_url"] == f"/api/v1/tasks/{task.pk}/feedback/{feedback.pk}/undo"

    undone = post(alice, pending["undo_url"])
    assert undone.status_code == 200, undone.content
    assert undone.json()["pending_decision"] is None
    assert undone.json()["status"] == S.NEEDS_REVIEW
    feedback.refresh_from_db()
    assert feedback.state == DecisionState.UNDONE and feedback.undone_by == requester

    again = post(alice, pending["undo_url"])
    assert again.status_code == 409
    assert "already undone" in again.json()["detail"]


def test_undo_after_the_window_is_409_and_changes_nothing(
    window: int, alice: Client, requester: Any
) -> None:
    """Issue 26 item 1: once applies_at has passed the undo is refused even if the job has
    not run yet; the decision then applies."""
    task = reviewable(requester)
    body = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "abandon", "undo_seconds": 30}
    ).json()
    Feedback.objects.filter(pk=body["pending_decision"]["id"]).update(
        applies_at=Feedback.objects.get().created_at - timedelta(seconds=1)
    )
    refused = post(alice, body["pending_decision"]["undo_url"])
    assert refused.status_code == 409
    assert "Too late to undo" in refused.json()["detail"]
    assert Feedback.objects.get().state == DecisionState.PENDING
    assert services.decision_apply_due() == [body["pending_decision"]["id"]]
    assert alice.get(f"/api/v1/tasks/{task.pk}").json()["status"] == S.ABANDONED


def test_someone_elses_decision_cannot_be_undone(
    window: int, alice: Client, rita: Client, requester: Any, other_requester: Any
) -> None:
    """Issue 26 item 1: a reviewer's pending decision on alice's task: alice (neither its
    author nor staff) gets 403 and nothing changes; an unknown decision is 404."""
    task = reviewable(requester)
    body = post(
        rita, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30}
    ).json()
    refused = post(alice, body["pending_decision"]["undo_url"])
    assert refused.status_code == 403
    assert Feedback.objects.get().state == DecisionState.PENDING
    assert post(alice, f"/api/v1/tasks/{task.pk}/feedback/999999/undo").status_code == 404


def test_a_second_decision_while_one_is_pending_is_409(
    window: int, alice: Client, rita: Client, requester: Any
) -> None:
    """Issue 26 item 1: the task accepts no other decision during the window."""
    task = reviewable(requester)
    post(rita, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30})
    second = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "abandon", "undo_seconds": 30}
    )
    assert second.status_code == 409
    assert "undo it first" in second.json()["detail"]
    assert Feedback.objects.filter(task=task).count() == 1


def test_undo_seconds_zero_applies_at_once_with_comment_and_reason_in_webhooks(
    window: int, alice: Client, requester: Any
) -> None:
    """Issue 26 items 1 and 6: ``undo_seconds: 0`` applies at once; the abandon reason is
    the API's last_decision and the webhook's decision."""
    task = reviewable(requester)
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:1/hook", events=None)
    response = post(
        alice,
        f"/api/v1/tasks/{task.pk}/feedback",
        {"action": "abandon", "comment": "Asked elsewhere.", "undo_seconds": 0},
    )
    body = response.json()
    assert body["status"] == S.ABANDONED and body["pending_decision"] is None
    assert body["last_decision"]["action"] == "abandon"
    assert body["last_decision"]["comment"] == "Asked elsewhere."
    assert body["last_decision"]["author"] == requester.get_username()
    delivery = WebhookDelivery.objects.get(task=task, event_type="task.abandoned")
    decision = json.loads(delivery.payload)["data"]["decision"]
    assert (decision["action"], decision["comment"]) == ("abandon", "Asked elsewhere.")


def test_a_pending_decision_sends_no_webhook_until_it_applies(
    window: int, alice: Client, requester: Any
) -> None:
    """Issue 26 items 1 and 6: no delivery while pending; once applied, task.closed
    carries the satisfied comment."""
    task = reviewable(requester)
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:1/hook", events=None)
    body = post(
        alice,
        f"/api/v1/tasks/{task.pk}/feedback",
        {"action": "satisfied", "comment": "Spot on.", "undo_seconds": 30},
    ).json()
    assert not WebhookDelivery.objects.filter(task=task).exists()
    feedback = Feedback.objects.get(pk=body["pending_decision"]["id"])
    later = feedback.applies_at + timedelta(seconds=1)
    assert services.decision_apply(feedback_id=feedback.pk, now=later) == "applied"
    delivery = WebhookDelivery.objects.get(task=task, event_type="task.closed")
    assert json.loads(delivery.payload)["data"]["decision"]["comment"] == "Spot on."


@pytest.mark.finding(34, 3)
@pytest.mark.parametrize(
    ("action", "status"),
    [("satisfied", S.CLOSED), ("abandon", S.ABANDONED), ("revise", S.NEEDS_REVISION)],
)
def test_a_decision_through_the_api_applies_at_once_without_undo_seconds(
    window: int, alice: Client, requester: Any, action: str, status: str
) -> None:
    """Issue 34 finding 3: before, a decision through the API waited the review pages'
    30 s window by default, so a client's satisfied, abandon or revise left the status
    unchanged. Now it applies at once unless the client asks for a window; the pages keep
    theirs (tests/ui/test_undo_browser.py)."""
    task = reviewable(requester)
    response = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": action, "comment": "Why."}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == status
    assert body["pending_decision"] is None
    assert body["last_decision"]["action"] == action
    task.refresh_from_db()
    assert task.status == status
    assert Feedback.objects.get(task=task).state == DecisionState.APPLIED
