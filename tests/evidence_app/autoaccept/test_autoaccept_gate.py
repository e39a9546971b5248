"""Issue 43, item 1: the gate cannot be weakened by the task. The certified threshold and
the drift stop belong to the judge that gives the accepted verdict (template version ×
model); a task's second judge only adds caution. ``AUTOACCEPT_UNCERTIFIED`` chooses what
a judge without an approved, unstopped threshold may do."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evidence_app.autoaccept.services import threshold_approve, threshold_shadow_start
from evidence_app.jobs import certify_thresholds_job
from evidence_app.models import AutoAcceptThreshold, ThresholdState, ValidationSnapshot
from evidence_app.validation.services import validation_run
from tasks_app.models import Task
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import JUDGE, ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db


def _approved(operator: Any, settings: Any) -> AutoAcceptThreshold:
    """τ = 0.90 approved for the test judge (200 right accepts at 0.90 to 0.99)."""
    labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200)
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get(state=ThresholdState.PROPOSED)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    return threshold_approve(threshold_id=row.pk, user=operator)


def _judged(judge: ScriptedJudge, score: float, **task_fields: Any) -> Task:
    """A task judged accepted at ``score`` by the test judge (and, with ``second_model``,
    accepted at 0.99 by the same model as its second judge)."""
    judge.replies = [verdict("accepted", score=score), verdict("accepted", score=0.99)]
    task = validating_task(**task_fields)
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    return task


def _reason(task: Task) -> str:
    last = task.events.last()
    assert last is not None
    return last.reason


@pytest.mark.parametrize("second_model", ["", JUDGE], ids=["alone", "with-a-second-judge"])
def test_a_second_judge_does_not_skip_the_certified_threshold(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any, second_model: str
) -> None:
    """Issue 43, item 1: with τ = 0.90 approved, an accept at 0.85 goes to a person
    whether or not the task asked for a second judge (that second judge agreeing)."""
    _approved(operator, settings)
    task = _judged(scripted_judge, 0.85, second_model=second_model)
    assert task.status == "needs_review"
    assert "below the certified threshold 0.90" in _reason(task)
    above = _judged(scripted_judge, 0.95, second_model=second_model)
    assert above.status == "awaiting_feedback"


def test_a_second_judge_does_not_skip_the_drift_stop(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 43, item 1: a judge stopped by drift sends its accepts to a person, a task
    with a second judge too."""
    row = _approved(operator, settings)
    AutoAcceptThreshold.objects.filter(pk=row.pk).update(stopped_at=timezone.now())
    task = _judged(scripted_judge, 0.99, second_model=JUDGE)
    assert task.status == "needs_review"
    assert "auto-accept is stopped for this judge" in _reason(task)


def test_a_judges_accepts_with_a_second_judge_certify_the_same_threshold() -> None:
    """Issue 43, item 1: one judge, one certification. 200 right accepts, half of them
    on tasks that asked for a second judge: together they certify τ = 0.90 for the judge
    (split by second judge, neither half would reach the 149 labels needed)."""
    rows = labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200)
    ValidationSnapshot.objects.bulk_create(
        ValidationSnapshot(
            task_id=row.task_id,
            attempt_index=row.attempt_index,
            kind="second",
            companion_of=row,
            status="accepted",
            score=0.99,
            model_name="test:second",
            created_at=row.created_at,
        )
        for row in rows[::2]
    )
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    assert (row.model_name, row.labelled) == (JUDGE, 200)
    assert row.threshold == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("mode", "status"),
    [("auto-accept", "awaiting_feedback"), ("certified-only", "needs_review")],
)
def test_an_uncertified_judge_accepts_alone_only_when_the_deployment_says_so(
    scripted_judge: ScriptedJudge, settings: Any, mode: str, status: str
) -> None:
    """Issue 43, item 1: no approved threshold: AUTOACCEPT_UNCERTIFIED=auto-accept keeps
    the judge's word; certified-only sends every accept to a person, saying why."""
    settings.AUTOACCEPT_UNCERTIFIED = mode
    task = _judged(scripted_judge, 0.99)
    assert task.status == status
    if mode == "certified-only":
        assert "no certified threshold" in _reason(task)


def test_certified_only_still_auto_accepts_above_an_approved_threshold(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 43, item 1: certified-only changes nothing for a certified judge."""
    _approved(operator, settings)
    settings.AUTOACCEPT_UNCERTIFIED = "certified-only"
    assert _judged(scripted_judge, 0.95).status == "awaiting_feedback"
    assert _judged(scripted_judge, 0.99, second_model=JUDGE).status == "awaiting_feedback"


def test_certified_only_sends_a_stopped_judges_accepts_to_a_person_too(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 43, item 1: a stopped threshold is no certificate in either mode."""
    row = _approved(operator, settings)
    settings.AUTOACCEPT_UNCERTIFIED = "certified-only"
    AutoAcceptThreshold.objects.filter(pk=row.pk).update(
        stopped_at=timezone.now() - timedelta(seconds=1)
    )
    assert _judged(scripted_judge, 0.99).status == "needs_review"


@pytest.mark.parametrize("value", ["maybe", "certified_only", ""])
def test_a_bad_autoaccept_uncertified_value_stops_start_up(value: str) -> None:
    """Issue 43, item 1: the setting is one of two words; anything else fails loudly."""
    env = {**os.environ, "AUTOACCEPT_UNCERTIFIED": value}
    result = subprocess.run(
        [sys.executable, "-c", "import project.settings"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "AUTOACCEPT_UNCERTIFIED" in result.stderr
