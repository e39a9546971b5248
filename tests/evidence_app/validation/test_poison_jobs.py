"""Issue 22: a validation job that crashes the same way every time (a poison job) is
tried JOB_MAX_TRIES times, then the task goes to a person with the error; it never
stays ``validating`` with nobody told."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from evidence_app.jobs import validate_attempt_job
from evidence_app.models import ValidationFailure, ValidationSnapshot
from evidence_app.validation import services as evidence_services
from tasks_app.models import OutboxJob, TaskEvent
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db


def _broken_packets(*_: Any, **__: Any) -> Any:
    # Fault injection: a defect that fails every delivery of this validation the same way.
    raise RuntimeError("the packet could not be built")


def test_a_crashing_validation_is_retried_then_handed_to_a_person(
    scripted_judge: ScriptedJudge,
    settings: Any,
    monkeypatch: Any,
    client: Any,
    reviewer: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.JOB_MAX_TRIES = 3
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    monkeypatch.setattr(evidence_services, "build_packet", _broken_packets)

    for tries in (1, 2):
        with django_capture_on_commit_callbacks(execute=False):
            assert validate_attempt_job(task.pk, 1) == "crashed"
        task.refresh_from_db()
        assert task.status == "validating" and task.validation_claimed_at is None
        assert ValidationFailure.objects.filter(task=task, attempt_index=1).count() == tries
        # Sent again through the outbox, a little later each time, under the task's job id.
        resent = OutboxJob.objects.filter(task_ref=task.pk).order_by("-id").first()
        assert resent is not None and resent.job_id == task.job_id
        assert resent.name == "evidence_app.validate_attempt" and resent.not_before is not None

    jobs_before = OutboxJob.objects.count()
    assert validate_attempt_job(task.pk, 1) == "gave_up"
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert OutboxJob.objects.count() == jobs_before  # no fourth try
    assert not ValidationSnapshot.objects.filter(task=task).exists()
    event = TaskEvent.objects.filter(task=task).order_by("-id").first()
    assert event is not None and event.to_status == "needs_review"
    assert "failed 3 times" in event.reason
    assert "RuntimeError: the packet could not be built" in event.reason
    # A late delivery finds the task moved on and does nothing.
    assert validate_attempt_job(task.pk, 1) == "duplicate"
    # The reviewer sees the task, with the error, in the queue and on its page.
    client.force_login(reviewer)
    queue = client.get(reverse("review_queue")).content.decode()
    assert task.title in queue
    monkeypatch.undo()
    page = client.get(reverse("task_detail", args=[task.pk]))
    assert page.status_code == 200
    assert "the packet could not be built" in page.content.decode()


def test_a_validation_that_crashes_once_then_succeeds_keeps_its_verdict(
    scripted_judge: ScriptedJudge, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A passing fault is tried again and the second try's verdict stands."""
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    with monkeypatch.context() as patch:
        patch.setattr(evidence_services, "build_packet", _broken_packets)
        with django_capture_on_commit_callbacks(execute=False):
            assert validate_attempt_job(task.pk, 1) == "crashed"
    assert validate_attempt_job(task.pk, 1) == "accepted"
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"
