"""Issue 36: audits nobody can bend. Through the API: an open audit names no task; a read
of the task's verdict or status by a person who could judge it makes their judgement not
blind (stored, counted apart, never in the certified figures); no one audits their own
work; audit rates are policy (a floor from the settings, an operator's recorded
exception); Trust lists the verdicts no certificate covers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from evidence_app.models import Audit, AuditExposure, ClaimLabel, TaskAuditSettings
from evidence_app.trust.audits import audit_judge, audit_mark_viewed
from evidence_app.trust.rates import trust_report
from evidence_app.trust.team import team_figures
from project.errors import Forbidden, InvalidInput
from tasks_app.models import Feedback, Task, WebhookEndpoint
from tests.api.conftest import bearer_client
from tests.audit_helpers import drawn_audit
from tests.factories import TaskFactory, ToolEvidenceFactory, UserFactory

pytestmark = pytest.mark.django_db


def post(client: Client, url: str, data: Any) -> Any:
    return client.post(url, data=json.dumps(data), content_type="application/json")


def second_reviewer() -> Any:
    user = UserFactory(username="ray", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


def figures() -> tuple[int, int, int]:
    """(judged, wrong, not blind) of the 30-day false accepts, summed over groups."""
    rates = [g.window.false_accepts for g in trust_report().groups if g.window.false_accepts]
    return (
        sum(r.judged for r in rates),
        sum(r.wrong for r in rates),
        sum(r.not_blind for r in rates),
    )


@pytest.mark.parametrize(
    "channel",
    [
        "/api/v1/tasks/{task}",
        "/api/v1/tasks/{task}/events",
        "/api/v1/tasks/{task}/validations",
        "/api/v1/validations/{validation}",
        "/api/v1/tasks?status=awaiting_feedback",
        "/api/v1/tasks/active",
    ],
)
def test_a_read_of_the_verdict_through_the_api_makes_the_judgement_not_blind(
    rita: Client, reviewer: Any, channel: str
) -> None:
    """Issue 36, item 1: each API channel that tells the verdict or status records the
    read; the judgement after it is stored, shown as not blind and not counted."""
    audit = drawn_audit("accepted")
    url = channel.format(task=audit.task_id, validation=audit.snapshot_id)
    assert rita.get(url).status_code == 200
    exposure = AuditExposure.objects.get(audit=audit, user=reviewer)
    assert "api" in exposure.channel.lower()
    judged = post(
        rita, f"/api/v1/audits/{audit.pk}/judgement", {"correct": False, "comment": "wrong"}
    )
    assert judged.status_code == 200, judged.content
    assert judged.json()["blind"] is False and judged.json()["correct"] is False
    assert figures() == (0, 0, 1)


def test_a_blind_judgement_counts_and_the_audit_list_names_no_task(
    rita: Client, reviewer: Any
) -> None:
    """Issue 36, item 1: the audit's own API neither names the task nor records a read."""
    audit = drawn_audit("accepted")
    assert rita.get(f"/api/v1/audits/{audit.pk}").json()["task_id"] is None
    post(rita, f"/api/v1/audits/{audit.pk}/judgement", {"correct": False, "comment": "wrong"})
    assert not AuditExposure.objects.exists()
    assert Audit.objects.get(pk=audit.pk).blind is True
    assert figures() == (1, 1, 0)


def test_the_requester_cannot_audit_their_own_task(requester: Any) -> None:
    """Issue 36, item 2: the requester (whose token submits an external task's attempts)
    is refused with the reason, even as a reviewer; the audit stays open and is not
    offered to them."""
    requester.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    audit = drawn_audit("accepted", owner=requester)
    own = bearer_client(requester)
    refused = post(own, f"/api/v1/audits/{audit.pk}/judgement", {"correct": True})
    assert refused.status_code == 403, refused.content
    assert "own work" in refused.content.decode()
    assert Audit.objects.get(pk=audit.pk).state == "open" and not ClaimLabel.objects.exists()
    assert own.get("/api/v1/audits").json()["count"] == 0
    other = bearer_client(second_reviewer())
    assert other.get("/api/v1/audits").json()["count"] == 1
    assert post(other, f"/api/v1/audits/{audit.pk}/judgement", {"correct": True}).status_code == 200


def test_a_reviewer_who_decided_the_task_cannot_audit_it(reviewer: Any) -> None:
    """Issue 36, item 2: anyone who decided the task is refused (403), in the service
    and the API, and their list leaves the audit out."""
    audit = drawn_audit("accepted")
    Feedback.objects.create(task=audit.task, author=reviewer, action="revise", comment="x")
    with pytest.raises(Forbidden, match="decided this task"):
        audit_judge(audit.pk, user=reviewer, correct=True)
    client = bearer_client(reviewer)
    assert client.get("/api/v1/audits").json()["count"] == 0
    assert Audit.objects.get(pk=audit.pk).state == "open"


def test_a_requester_cannot_lower_an_audit_rate_below_the_floor(
    alice: Client, settings: Any
) -> None:
    """Issue 36, item 3: the settings are the floor; raising is fine; lowering is a 422
    naming the field, and nothing is created."""
    settings.AUDIT_RATE, settings.AUDIT_REJECT_RATE = 0.05, 0.02
    for body, field in (
        ({"audit_rate": 0}, "audit_rate"),
        ({"audit_reject_rate": 0.01}, "audit_reject_rate"),
    ):
        refused = post(alice, "/api/v1/tasks", {"request": "Budget?", **body})
        assert refused.status_code == 422, refused.content
        assert field in refused.content.decode()
    assert not Task.objects.exists()
    raised = post(alice, "/api/v1/tasks", {"request": "Budget?", "audit_rate": 0.5})
    assert raised.status_code == 201 and raised.json()["audit_rate"] == 0.5


def test_only_an_operator_lowers_a_rate_and_it_is_recorded(
    otto: Client, operator: Any, settings: Any
) -> None:
    """Issue 36, item 3: an operator's exception needs a reason and records who, when, why."""
    settings.AUDIT_RATE = 0.05
    refused = post(otto, "/api/v1/tasks", {"request": "Load test", "audit_rate": 0})
    assert refused.status_code == 422 and "audit_rate_reason" in refused.content.decode()
    made = post(
        otto,
        "/api/v1/tasks",
        {"request": "Load test", "audit_rate": 0, "audit_rate_reason": "synthetic load test"},
    )
    assert made.status_code == 201, made.content
    own = TaskAuditSettings.objects.get(task_id=made.json()["id"])
    assert (own.audit_rate, own.audit_rate_set_by, own.audit_rate_reason) == (
        0.0,
        operator,
        "synthetic load test",
    )
    assert own.audit_rate_set_at is not None


def test_verdicts_at_rate_zero_are_listed_uncovered_not_making_the_window_unknown(
    otto: Client, operator: Any, requester: Any
) -> None:
    """Issue 36, item 3: somebody else's rate-0 verdicts no longer turn the estimate
    unknown; Trust lists them (count, whose, who set the rate, why)."""
    audit = drawn_audit("accepted")
    audit_judge(audit.pk, user=second_reviewer(), correct=True)
    for _ in range(3):
        zero = drawn_audit("accepted", owner=requester)
        zero.snapshot.__class__.objects.filter(pk=zero.snapshot_id).update(audit_probability=0)
        TaskAuditSettings.objects.create(
            task_id=zero.task_id,
            audit_rate=0,
            audit_rate_set_by=operator,
            audit_rate_reason="load test",
        )
        zero.delete()
    window = trust_report().groups[0].window.false_accepts
    assert window is not None and window.eligible == 1 and window.interval.known
    body = otto.get("/api/v1/trust").json()
    assert body["uncovered"] == [
        {
            "route": "auto_accepted",
            "count": 3,
            "requester": "alice",
            "set_by": "otto",
            "reason": "load test",
        }
    ]


def test_a_corrected_citation_to_another_tasks_evidence_is_refused_on_an_audit(
    reviewer: Any,
) -> None:
    """Issue 36, item 4: the audit path refuses what the decision path refuses (422),
    and nothing is written."""
    audit = drawn_audit("accepted")
    foreign = ToolEvidenceFactory(task=TaskFactory(), content="other")
    for evidence_id in (foreign.pk, 999_999):
        with pytest.raises(InvalidInput, match="not this task's"):
            audit_judge(
                audit.pk,
                user=reviewer,
                correct=True,
                claim_labels=[
                    {
                        "claim_index": 0,
                        "label": "supported",
                        "corrected_citation": {"evidence_id": evidence_id, "quote": "x"},
                    }
                ],
            )
    assert Audit.objects.get(pk=audit.pk).state == "open" and not ClaimLabel.objects.exists()


def test_audit_time_counts_from_the_judges_own_first_view(reviewer: Any) -> None:
    """Issue 36, item 4: another person's view is not the judge's; a judgement without
    a view of one's own is "no first view", not 0 s."""
    audit = drawn_audit("accepted")
    audit_mark_viewed(audit_id=audit.pk, user=second_reviewer())
    audit_judge(audit.pk, user=reviewer, correct=True)
    team = team_figures("week")
    assert (team.audit_time.count, team.audit_time.no_first_view) == (0, 1)


def test_webhooks_subscribe_to_audit_events_by_name(alice: Client, settings: Any) -> None:
    """Issue 36, item 4: audit.opened and audit.judged, as the docs list them."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    made = post(
        alice,
        "/api/v1/webhooks",
        {"url": "http://127.0.0.1:8001/hook", "events": ["audit.opened", "audit.judged"]},
    )
    assert made.status_code == 201, made.content
    assert WebhookEndpoint.objects.get().events == ["audit.opened", "audit.judged"]
