"""Issue 38: auto-accept at a certified risk in the app: the job certifies each judge's
threshold on its labelled verdicts, an operator approves it after a shadow, the route
follows it, the drift rule stops it, and Trust, /metrics and webhooks say so."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evidence_app.autoaccept.selectors import JudgeKey
from evidence_app.autoaccept.services import threshold_approve, threshold_shadow_start
from evidence_app.jobs import certify_thresholds_job
from evidence_app.models import (
    AutoAcceptThreshold,
    ThresholdState,
)
from evidence_app.validation.services import validation_run
from evidence_app.validator.templates import get_template
from project.errors import Forbidden, InvalidInput, StaleAction
from tasks_app.models import Task
from tasks_app.notifications.models import WebhookDelivery, WebhookEndpoint
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import JUDGE, ScriptedJudge, validating_task, verdict
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def _key() -> JudgeKey:
    return JudgeKey(get_template("default").version, JUDGE)


def _strong_labels() -> None:
    """200 accepts scoring 0.9 or more, all right; 100 scoring under 0.5, the highest
    third of them wrong."""
    labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200)
    labelled_accepts([0.2 + (i % 30) / 100 for i in range(100)], [i % 30 >= 20 for i in range(100)])


def _approved(operator: Any, settings: Any) -> AutoAcceptThreshold:
    _strong_labels()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get(state=ThresholdState.PROPOSED)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    return threshold_approve(threshold_id=row.pk, user=operator)


def test_the_job_certifies_a_threshold_from_judged_audits_and_proposes_it(
    operator: Any,
) -> None:
    """Issue 38, item 2: labelled accepts certify the lowest threshold whose bound is under
    the target; the job stores it as a proposal with its curve and guarantee, and a rerun
    on the same labels keeps the one proposal."""
    _strong_labels()
    assert certify_thresholds_job() == {"judges": 1, "certified": 1, "stopped": 0}
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    assert row.state == ThresholdState.PROPOSED
    assert row.threshold == pytest.approx(0.9)
    assert row.labelled == 300 and row.upper is not None and row.upper < 0.02
    assert row.automated == pytest.approx(200 / 300)
    assert "at most 2 % of auto-accepted answers are wrong" in row.guarantee
    assert row.curve[0]["threshold"] == pytest.approx(0.99)
    assert any(p["threshold"] == pytest.approx(0.9) for p in row.curve)


def test_too_few_labels_certify_nothing_and_the_proposal_says_why() -> None:
    """Issue 38, item 2: under 149 labelled accepts at 2 % nothing is certified."""
    labelled_accepts([0.95] * 100, [False] * 100)
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    assert row.threshold is None
    assert "too few" in row.guarantee


def test_approval_needs_a_shadow_of_the_set_length_and_an_operator(
    operator: Any, reviewer: Any, settings: Any
) -> None:
    """Issue 38, item 2: a proposal takes effect only after its shadow, by an operator."""
    _strong_labels()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    with pytest.raises(StaleAction):
        threshold_approve(threshold_id=row.pk, user=operator)
    with pytest.raises(Forbidden):
        threshold_shadow_start(threshold_id=row.pk, user=reviewer)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 24
    with pytest.raises(InvalidInput):
        threshold_approve(threshold_id=row.pk, user=operator)
    row.refresh_from_db()
    assert row.state == ThresholdState.SHADOW and row.approved_at is None
    later = timezone.now() + timedelta(hours=25)
    approved = threshold_approve(threshold_id=row.pk, user=operator, now=later)
    assert approved.state == ThresholdState.APPROVED


def test_without_an_approved_threshold_an_accepted_verdict_goes_to_the_requester(
    scripted_judge: ScriptedJudge,
) -> None:
    """Issue 38, item 3: no approved threshold keeps today's behaviour."""
    scripted_judge.replies = [verdict("accepted", score=0.3)]
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"


def test_an_approved_threshold_routes_accepts_by_their_score(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 38, item 3: at or above τ the accepted verdict goes to the requester; below
    it, to a person with the reason "below the certified threshold"."""
    _approved(operator, settings)
    scripted_judge.replies = [verdict("accepted", score=0.95)]
    above = validating_task()
    validation_run(task_id=above.pk, attempt_index=1)
    scripted_judge.replies = [verdict("accepted", score=0.6)]
    below = validating_task()
    snapshot = validation_run(task_id=below.pk, attempt_index=1)
    above.refresh_from_db()
    below.refresh_from_db()
    assert above.status == "awaiting_feedback"
    assert below.status == "needs_review"
    assert "below the certified threshold 0.90" in below.events.last().reason
    assert snapshot is not None and snapshot.route == "to_person"


def test_drift_stops_auto_accept_and_operators_are_told(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any, client: Client
) -> None:
    """Issue 38, item 3: audits of the auto-accepts after approval that are wrong again
    and again stop the judge's auto-accept: everything goes to a person, a webhook event
    is written, /metrics and the Trust page say so."""
    row = _approved(operator, settings)
    owner = TaskFactory().owner
    WebhookEndpoint.objects.create(
        owner=owner, url="https://example.com/hook", events=["auto_accept.stopped"], secret="s"
    )
    labelled_accepts(
        [0.97] * 10, [True] * 10, when=timezone.now() + timedelta(seconds=1), owner=owner
    )
    assert certify_thresholds_job()["stopped"] == 1
    row.refresh_from_db()
    assert row.stopped and row.drift_wrong == 10 and row.drift_audits == 10
    delivery = WebhookDelivery.objects.get(event_type="auto_accept.stopped")
    assert json.loads(delivery.payload)["data"]["audit"]["threshold_id"] == row.pk

    scripted_judge.replies = [verdict("accepted", score=0.99)]
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert "auto-accept is stopped for this judge" in task.events.last().reason

    samples = {
        (sample.name, sample.labels.get("model")): sample.value
        for family in text_string_to_metric_families(client.get("/metrics").content.decode())
        for sample in family.samples
    }
    assert samples[("evidentia_auto_accept_stopped", JUDGE)] == 1
    assert samples[("evidentia_auto_accept_threshold", JUDGE)] == pytest.approx(0.9)
    client.force_login(operator)
    page = client.get("/ops/trust/").content.decode()
    assert "Auto-accept stopped" in page


def test_trust_page_shows_the_curve_the_guarantee_and_the_controls(
    operator: Any, client: Client, settings: Any
) -> None:
    """Issue 38, item 4: per judge the curve, the proposal and its guarantee, the shadow
    figures and the controls; a judge without an approved threshold is not certified."""
    _strong_labels()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    client.force_login(operator)
    page = client.get("/ops/trust/").content.decode()
    assert 'data-state="not certified"' in page and "No guarantee yet: threshold 0.900" in page
    assert "Proposed threshold 0.900" in page and "<svg" in page and "<polyline" in page
    assert "Run it in shadow" in page
    response = client.post(f"/ops/trust/thresholds/{row.pk}/", {"op": "shadow"})
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.state == ThresholdState.SHADOW
    page = client.get("/ops/trust/").content.decode()
    assert "would have auto-accepted 0" in page and "Approve threshold 0.900" in page
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    client.post(f"/ops/trust/thresholds/{row.pk}/", {"op": "approve"})
    row.refresh_from_db()
    assert row.state == ThresholdState.APPROVED
    page = client.get("/ops/trust/").content.decode()
    assert "Certified since" in page and "threshold 0.900" in page


def test_a_reviewer_cannot_approve_a_threshold(reviewer: Any, client: Client) -> None:
    """Issue 38, item 4: the controls are for operators; nothing changes otherwise."""
    _strong_labels()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    client.force_login(reviewer)
    response = client.post(f"/ops/trust/thresholds/{row.pk}/", {"op": "shadow"})
    assert response.status_code in (302, 403)
    row.refresh_from_db()
    assert row.state == ThresholdState.PROPOSED
    assert Task.objects.count() == 2
