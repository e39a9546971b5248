"""Issue 27, item 1: every automatic verdict records its route and audit probability,
and a drawn one gets an audit in the verdict's own transaction; the task never waits."""

from __future__ import annotations

from typing import Any

import pytest

from evidence_app.models import Audit, ValidationSnapshot
from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db


def _validate(task: Any) -> ValidationSnapshot:
    snapshot = validation_run(task_id=task.pk, attempt_index=task.attempt_count)
    assert snapshot is not None
    return snapshot


def test_an_auto_accept_drawn_at_rate_one_is_audited_and_the_task_moves_on(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    settings.AUDIT_RATE = 1.0
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"
    assert snapshot.route == "auto_accepted" and snapshot.audit_probability == 1.0
    audit = Audit.objects.get()
    assert audit.snapshot_id == snapshot.pk and audit.state == "open"
    assert audit.route == "auto_accepted" and audit.probability == 1.0
    assert audit.model_name == snapshot.model_name and audit.correct is None


def test_rate_zero_records_the_probability_and_draws_nothing(
    scripted_judge: ScriptedJudge,
) -> None:
    scripted_judge.replies = [verdict("accepted")]
    snapshot = _validate(validating_task())
    assert snapshot.route == "auto_accepted" and snapshot.audit_probability == 0.0
    assert not Audit.objects.exists()


def test_the_task_rate_overrides_the_setting_and_rejects_use_their_own_rate(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    settings.AUDIT_RATE = 1.0
    scripted_judge.replies = [verdict("rejected")]
    task = validating_task(audit_rate=0.0, audit_reject_rate=1.0)
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_revision"
    assert snapshot.route == "auto_rejected" and snapshot.audit_probability == 1.0
    assert Audit.objects.get().route == "auto_rejected"


def test_a_verdict_a_person_sees_anyway_is_not_eligible(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    settings.AUDIT_RATE = settings.AUDIT_REJECT_RATE = 1.0
    scripted_judge.replies = [verdict("insufficient_evidence")]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert snapshot.route == "to_person" and snapshot.audit_probability is None
    assert not Audit.objects.exists()
