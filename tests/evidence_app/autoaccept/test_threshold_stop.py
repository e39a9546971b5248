"""Issue 46, item 2: an operator's stop of a judge's auto-accept, one service for the
Trust page's button and the API: recorded with who and why, every accepted verdict of
that judge then goes to a person, until a new threshold is approved."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.autoaccept.services import (
    threshold_approve,
    threshold_shadow_start,
    threshold_stop,
)
from evidence_app.jobs import certify_thresholds_job
from evidence_app.models import AutoAcceptThreshold, ThresholdState
from evidence_app.validation.services import validation_run
from project.errors import Forbidden, InvalidInput
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db


def _approved(operator: Any, settings: Any) -> AutoAcceptThreshold:
    labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200)
    labelled_accepts([0.2 + (i % 30) / 100 for i in range(100)], [i % 30 >= 20 for i in range(100)])
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get(state=ThresholdState.PROPOSED)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    return threshold_approve(threshold_id=row.pk, user=operator)


def test_the_trust_page_stops_auto_accept_and_the_judges_accepts_go_to_a_person(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any, client: Client
) -> None:
    """Issue 46, item 2: the Trust page offers the stop with a reason; after it an
    accepted verdict scoring above τ goes to a person, and the page says who stopped it
    and why."""
    row = _approved(operator, settings)
    client.force_login(operator)
    page = client.get("/ops/trust/").content.decode()
    assert 'name="op" value="stop"' in page

    refused = client.post(f"/ops/trust/thresholds/{row.pk}/", {"op": "stop", "reason": ""})
    assert refused.status_code == 302
    row.refresh_from_db()
    assert row.stopped_at is None

    done = client.post(
        f"/ops/trust/thresholds/{row.pk}/",
        {"op": "stop", "reason": "The handbook was replaced today"},
    )
    assert done.status_code == 302
    row.refresh_from_db()
    assert row.stopped and row.stopped_by == operator
    assert row.stop_reason == "The handbook was replaced today"
    page = client.get("/ops/trust/").content.decode()
    assert "Auto-accept stopped" in page and "The handbook was replaced today" in page

    scripted_judge.replies = [verdict("accepted", score=0.99)]
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert "auto-accept is stopped for this judge (an operator stopped it)" in (
        task.events.last().reason
    )


def test_only_an_operator_stops_and_only_with_a_reason(
    operator: Any, reviewer: Any, settings: Any
) -> None:
    """Issue 46, item 2: the service's own refusals, with nothing changed."""
    row = _approved(operator, settings)
    with pytest.raises(Forbidden):
        threshold_stop(threshold_id=row.pk, user=reviewer, reason="I think it drifts badly")
    with pytest.raises(InvalidInput, match="at least 10 characters"):
        threshold_stop(threshold_id=row.pk, user=operator, reason="  short  ")
    row.refresh_from_db()
    assert row.stopped_at is None and row.stop_reason == "" and row.stopped_by is None
