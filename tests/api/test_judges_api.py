"""Issue 46, item 2: judges and their certified thresholds through the API alone: list
the judges, certify, shadow, approve and stop, with the Trust page's rules, refusals
(nothing changed) and records, and the ``auto_accept.approved`` webhook event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client

from evidence_app.models import AutoAcceptThreshold, ThresholdState
from evidence_app.validator.templates import get_template
from project.celery import app as celery_app
from tasks_app.models import WebhookDelivery, WebhookEndpoint
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import JUDGE

pytestmark = pytest.mark.django_db

API = "/api/v1"
JSON = "application/json"


@pytest.fixture
def eager_jobs() -> Iterator[None]:
    """Jobs run in-process when sent (after commit), as a worker would run them."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = previous


def _strong_labels() -> None:
    """200 accepts scoring 0.9 or more, all right; 100 under 0.5, a third of them wrong:
    τ = 0.9 is certified at 2 %."""
    labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200)
    labelled_accepts([0.2 + (i % 30) / 100 for i in range(100)], [i % 30 >= 20 for i in range(100)])


def _certify(client: Client, capture: Any) -> dict[str, Any]:
    with capture(execute=True):
        response = client.post(f"{API}/judges/certify")
    assert response.status_code == 202, response.content
    return response.json()


def _judge(client: Client) -> dict[str, Any]:
    response = client.get(f"{API}/judges")
    assert response.status_code == 200, response.content
    body = response.json()
    ours = [j for j in body["items"] if j["model"] == JUDGE]
    assert len(ours) == 1, body
    return ours[0]


def _rows() -> list[dict[str, Any]]:
    return [model_to_dict(row) for row in AutoAcceptThreshold.objects.order_by("pk")]


def _webhook(owner: Any, event: str) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        owner=owner, url="https://example.com/hook", events=[event], secret="s"
    )


def test_an_operator_certifies_shadows_and_approves_a_threshold_without_a_page(
    otto: Client,
    operator: Any,
    requester: Any,
    settings: Any,
    eager_jobs: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Issue 46, item 2 (done when): certify, read the certification (τ, target, labels,
    curve points, guarantee), start its shadow, approve it after the shadow, all through
    the API; the approval is recorded and announced to the operators' webhooks."""
    settings.VALIDATOR_MODEL = JUDGE
    settings.AUTOACCEPT_SHADOW_HOURS = 24
    _strong_labels()
    operators_hook = _webhook(operator, "auto_accept.approved")
    requesters_hook = _webhook(requester, "auto_accept.approved")

    queued = _certify(otto, django_capture_on_commit_callbacks)
    assert queued["status"] == "queued" and queued["job_id"]
    judge = _judge(otto)
    assert judge["role"] == "default" and judge["auto_accept"] == "not_certified"
    assert judge["template_version"] == get_template("default").version
    assert judge["approved"] is None
    certification = judge["certification"]
    assert certification["state"] == "proposed"
    assert certification["threshold"] == pytest.approx(0.9)
    assert certification["target"] == settings.TRUST_TARGET_FALSE_ACCEPT
    assert certification["labelled"] == 300
    assert "at most 2 % of auto-accepted answers are wrong" in certification["guarantee"]
    assert certification["curve"][0]["threshold"] == pytest.approx(0.99)
    assert {"threshold", "accepted", "coverage", "risk", "upper"} <= set(certification["curve"][0])
    assert certification["computed_at"] >= queued["requested_at"]
    threshold_id = certification["id"]

    shadow = otto.post(f"{API}/judges/thresholds/{threshold_id}/shadow")
    assert shadow.status_code == 200, shadow.content
    assert shadow.json()["state"] == "shadow"
    assert shadow.json()["shadow_started_by"] == operator.username
    assert shadow.json()["shadow"]["would_accept"] == 0
    assert shadow.json()["shadow_ready_at"] is not None

    # Too early: refused, naming when it may be approved; nothing changed.
    before = _rows()
    early = otto.post(f"{API}/judges/thresholds/{threshold_id}/approve")
    assert early.status_code == 422, early.content
    assert "The shadow runs until" in early.json()["detail"]
    assert _rows() == before

    settings.AUTOACCEPT_SHADOW_HOURS = 0
    with django_capture_on_commit_callbacks(execute=False):
        approved = otto.post(f"{API}/judges/thresholds/{threshold_id}/approve")
    assert approved.status_code == 200, approved.content
    body = approved.json()
    assert body["state"] == "approved" and body["approved_by"] == operator.username
    assert body["drift"] == {
        "audits": 0,
        "wrong": 0,
        "statistic": 0.0,
        "stopped": False,
        "stopped_at": None,
        "stopped_by": None,
        "reason": "",
    }
    judge = _judge(otto)
    assert judge["auto_accept"] == "certified" and judge["certification"] is None
    assert judge["approved"]["id"] == threshold_id

    delivery = WebhookDelivery.objects.get(event_type="auto_accept.approved")
    assert delivery.endpoint == operators_hook and delivery.task is None
    event = json.loads(delivery.payload)["data"]["judge"]
    assert event["threshold_id"] == threshold_id and event["model"] == JUDGE
    assert event["threshold"] == pytest.approx(0.9) and "guarantee" in event
    assert not WebhookDelivery.objects.filter(endpoint=requesters_hook).exists()


def test_refusals_name_why_and_change_nothing(
    otto: Client,
    rita: Client,
    settings: Any,
    eager_jobs: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Issue 46, item 2: the page's refusals over the API: 403 for a reviewer, 404 for an
    unknown threshold, 409 for an operation the threshold's state does not allow, 422
    for a missing reason; nothing changes on any of them."""
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    _strong_labels()
    _certify(otto, django_capture_on_commit_callbacks)
    row = AutoAcceptThreshold.objects.get()
    before = _rows()

    assert rita.get(f"{API}/judges").status_code == 403
    assert rita.post(f"{API}/judges/certify").status_code == 403
    assert rita.post(f"{API}/judges/thresholds/{row.pk}/shadow").status_code == 403
    assert otto.post(f"{API}/judges/thresholds/999999/shadow").status_code == 404
    not_yet = otto.post(f"{API}/judges/thresholds/{row.pk}/approve")
    assert not_yet.status_code == 409
    assert "not in shadow: start its shadow first" in not_yet.json()["detail"]
    not_approved = otto.post(
        f"{API}/judges/thresholds/{row.pk}/stop",
        {"reason": "Audits look wrong this week"},
        content_type=JSON,
    )
    assert not_approved.status_code == 409
    assert "not the judge's approved threshold" in not_approved.json()["detail"]
    assert _rows() == before

    assert otto.post(f"{API}/judges/thresholds/{row.pk}/shadow").status_code == 200
    again = otto.post(f"{API}/judges/thresholds/{row.pk}/shadow")
    assert again.status_code == 409 and "no longer a proposal" in again.json()["detail"]
    assert otto.post(f"{API}/judges/thresholds/{row.pk}/approve").status_code == 200
    before = _rows()
    for reason in ("", "   \t     ", "too short"):
        blank = otto.post(
            f"{API}/judges/thresholds/{row.pk}/stop", {"reason": reason}, content_type=JSON
        )
        assert blank.status_code == 422, (reason, blank.content)
    assert (
        otto.post(f"{API}/judges/thresholds/{row.pk}/stop", {}, content_type=JSON).status_code
        == 422
    )
    assert _rows() == before


def test_stop_sends_every_accept_to_a_person_until_a_new_approval(
    otto: Client,
    operator: Any,
    settings: Any,
    eager_jobs: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Issue 46, item 2: an operator's stop is recorded with who and why, announced as
    ``auto_accept.stopped``, refused a second time; the next certification proposes the
    same τ again, and its approval starts auto-accept afresh."""
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    _strong_labels()
    hook = _webhook(operator, "auto_accept.stopped")
    _certify(otto, django_capture_on_commit_callbacks)
    first = AutoAcceptThreshold.objects.get()
    otto.post(f"{API}/judges/thresholds/{first.pk}/shadow")
    otto.post(f"{API}/judges/thresholds/{first.pk}/approve")

    stopped = otto.post(
        f"{API}/judges/thresholds/{first.pk}/stop",
        {"reason": "The source handbook changed on Monday"},
        content_type=JSON,
    )
    assert stopped.status_code == 200, stopped.content
    drift = stopped.json()["drift"]
    assert drift["stopped"] and drift["stopped_by"] == operator.username
    assert drift["reason"] == "The source handbook changed on Monday"
    assert _judge(otto)["auto_accept"] == "stopped"
    event = json.loads(WebhookDelivery.objects.get(endpoint=hook).payload)["data"]["judge"]
    assert event["threshold_id"] == first.pk and event["stopped_by"] == operator.username
    assert event["reason"] == "The source handbook changed on Monday"
    twice = otto.post(
        f"{API}/judges/thresholds/{first.pk}/stop",
        {"reason": "Still stopping it, again"},
        content_type=JSON,
    )
    assert twice.status_code == 409 and "approve a new threshold" in twice.json()["detail"]

    _certify(otto, django_capture_on_commit_callbacks)
    judge = _judge(otto)
    again = judge["certification"]
    assert again is not None and again["threshold"] == pytest.approx(0.9)
    assert again["id"] != first.pk
    otto.post(f"{API}/judges/thresholds/{again['id']}/shadow")
    assert otto.post(f"{API}/judges/thresholds/{again['id']}/approve").status_code == 200
    first.refresh_from_db()
    assert first.state == ThresholdState.RETIRED and first.stop_reason
    judge = _judge(otto)
    assert judge["auto_accept"] == "certified" and judge["approved"]["id"] == again["id"]
    assert AutoAcceptThreshold.objects.get(pk=again["id"]).stopped_at is None
