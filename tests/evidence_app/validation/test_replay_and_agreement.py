"""V9 (replay, bulk replay command) and V10 (validator–human agreement)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from evidence_app.jobs import replay_validation_job
from evidence_app.models import ReplayRequest, ValidationSnapshot
from evidence_app.trust.agreement import agreement_stats, cohen_kappa
from evidence_app.validation.replay import replay_request, replay_validation
from evidence_app.validation.services import validation_run
from tasks_app.models import Feedback, TaskEvent
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict
from tests.factories import TaskFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db


def _validated(scripted_judge: ScriptedJudge, status: str = "accepted") -> ValidationSnapshot:
    scripted_judge.replies = [
        verdict(status, evidence_gaps=["gap"] if status != "accepted" else [])
    ]
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    return snapshot


def test_replay_stores_a_linked_snapshot_and_leaves_the_task_untouched(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """V9: replay on the stored packet, new snapshot, task unchanged."""
    original = _validated(scripted_judge, "accepted")
    task = original.task
    task.refresh_from_db()
    before = (task.status, task.version, task.validation_outcome, task.updated_at)
    events = TaskEvent.objects.filter(task=task).count()

    scripted_judge.replies = [verdict("insufficient_evidence", evidence_gaps=["no source"])]
    replay = replay_validation(snapshot=original, template="terse", requested_by=operator)

    task.refresh_from_db()
    assert (task.status, task.version, task.validation_outcome, task.updated_at) == before
    assert TaskEvent.objects.filter(task=task).count() == events
    assert replay.pk != original.pk
    assert replay.kind == "replay" and replay.replay_of_id == original.pk
    assert replay.requested_by == operator
    assert replay.status == "insufficient_evidence"
    assert replay.template_name == "terse" and replay.template_version != original.template_version
    assert replay.model_name == original.model_name
    assert replay.evidence_run_ids == original.evidence_run_ids
    assert "1,750 EUR" in replay.rendered_input
    # A replay of a replay still points at the original decision.
    again = replay_validation(snapshot=replay, model="offline:judge")
    assert again.replay_of_id == original.pk and again.model_name == "offline:judge"
    assert again.status == "accepted"  # the offline judge finds the figure in the evidence
    # Agreement and the feedback service keep reading originals only.
    assert ValidationSnapshot.objects.originals().filter(task=task).count() == 1


def test_replay_job_runs_the_request_and_records_its_result(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """V9, issue 22: the replay job takes a request id, stores a replay and marks the
    request succeeded with it; a second delivery does nothing; a missing request is
    ``gone``."""
    original = _validated(scripted_judge)
    request = replay_request(snapshot=original, template="terse", requested_by=operator)
    assert request.state == "queued"
    assert replay_validation_job(request.pk) == "succeeded"
    request.refresh_from_db()
    replay = ValidationSnapshot.objects.get(kind="replay")
    assert request.result == replay and request.tries == 1 and request.error == ""
    assert replay.replay_of_id == original.pk and replay.requested_by == operator
    assert replay_validation_job(request.pk) == "succeeded"  # a late duplicate
    assert ValidationSnapshot.objects.filter(kind="replay").count() == 1
    assert replay_validation_job(999_999) == "gone"


def test_a_replay_that_crashes_says_failed_with_its_reason(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """Issue 22: a replay whose job raises is marked failed with the error, stores no
    snapshot and leaves the task as it was; it is not run again by a later delivery."""
    original = _validated(scripted_judge)
    task = original.task
    task.refresh_from_db()
    before = (task.status, task.version)
    # A template that is gone by the time the worker runs it (the API and the page
    # refuse an unknown one when queueing).
    request = replay_request(snapshot=original, template="retired", requested_by=operator)
    assert replay_validation_job(request.pk) == "failed"
    request.refresh_from_db()
    assert request.state == "failed" and request.finished_at is not None
    assert "retired" in request.error
    assert not ValidationSnapshot.objects.filter(kind="replay").exists()
    task.refresh_from_db()
    assert (task.status, task.version) == before
    assert replay_validation_job(request.pk) == "failed"
    request.refresh_from_db()
    assert request.tries == 1


def test_a_replay_whose_worker_never_finishes_stops_after_the_try_limit(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 22: a request left running by deliveries that never finished (the worker
    died each time) is failed with that reason once JOB_MAX_TRIES deliveries started."""
    settings.JOB_MAX_TRIES = 2
    original = _validated(scripted_judge)
    request = replay_request(snapshot=original, requested_by=operator)
    ReplayRequest.objects.filter(pk=request.pk).update(state="running", tries=2)
    assert replay_validation_job(request.pk) == "failed"
    request.refresh_from_db()
    assert "stopped after 2 tries" in request.error
    assert not ValidationSnapshot.objects.filter(kind="replay").exists()


def test_bulk_replay_command_prints_estimate_and_comparison_table(
    scripted_judge: ScriptedJudge,
) -> None:
    """V9: estimated input chars/tokens first, then a status comparison table."""
    first = _validated(scripted_judge, "accepted")
    second = _validated(scripted_judge, "insufficient_evidence")
    scripted_judge.replies = [verdict("accepted")]
    out = StringIO()
    call_command("replay_validations", "--template", "terse", stdout=out)
    text = out.getvalue()
    chars = first.rendered_input_chars + second.rendered_input_chars
    assert "Replaying 2 task(s): estimated input" in text
    estimate_line = text.splitlines()[0]
    reported = int(
        estimate_line.split("estimated input ")[1].split(" characters")[0].replace(",", "")
    )
    assert reported > chars
    assert f"~{reported // 4:,} tokens" in estimate_line
    assert "original \\ replay" in text
    assert "same status: 1 of 2; changed: 1" in text
    assert ValidationSnapshot.objects.filter(kind="replay").count() == 2
    lines = {
        line.split()[0]: line.split()
        for line in text.splitlines()
        if line.startswith(("accepted", "insufficient"))
    }
    assert lines["accepted"][1] == "1"  # accepted → accepted
    assert lines["insufficient_evidence"][1] == "1"  # insufficient → accepted


def test_bulk_replay_respects_cap_filters_and_dry_run(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    """V9: more tasks than REPLAY_BULK_MAX_TASKS is refused; --dry-run replays nothing."""
    settings.REPLAY_BULK_MAX_TASKS = 1
    _validated(scripted_judge, "accepted")
    newest = _validated(scripted_judge, "insufficient_evidence")
    with pytest.raises(CommandError, match="more than REPLAY_BULK_MAX_TASKS"):
        call_command("replay_validations", stdout=StringIO())
    out = StringIO()
    call_command("replay_validations", "--limit", "1", "--dry-run", stdout=out)
    assert "Replaying 1 task(s)" in out.getvalue() and "Dry run" in out.getvalue()
    assert not ValidationSnapshot.objects.filter(kind="replay").exists()
    out = StringIO()
    call_command("replay_validations", "--validator-status", "insufficient_evidence", stdout=out)
    replay = ValidationSnapshot.objects.get(kind="replay")
    assert replay.replay_of_id == newest.pk
    out = StringIO()
    call_command("replay_validations", "--status", "closed", stdout=out)
    assert "No validations match" in out.getvalue()


def _decision(task: Any, action: str, at: Any) -> None:
    Feedback.objects.create(task=task, action=action, created_at=at, comment="c")


def test_agreement_rate_kappa_and_confusion_per_template_and_model() -> None:
    """V10: agreement numbers on a fixture of human decisions."""
    now = timezone.now()
    earlier = now - timedelta(hours=1)
    rows = [
        # (validator status, human decision)
        ("accepted", "satisfied"),
        ("accepted", "satisfied"),
        ("accepted", "revise"),
        ("insufficient_evidence", "satisfied"),
        ("insufficient_evidence", "abandon"),
        ("rejected", "revise"),
        ("validator_error", "satisfied"),
    ]
    for status, action in rows:
        task = TaskFactory()
        ValidationSnapshotFactory(
            task=task,
            status=status,
            template_version="default@aaa",
            model_name="m1",
            created_at=earlier,
        )
        _decision(task, action, now)
    # Another group; and a replay and a decision with no prior validation, both ignored.
    other = TaskFactory()
    original = ValidationSnapshotFactory(
        task=other,
        status="accepted",
        template_version="terse@bbb",
        model_name="m2",
        created_at=earlier,
    )
    ValidationSnapshotFactory(
        task=other,
        status="rejected",
        kind="replay",
        replay_of=original,
        template_version="x@1",
        model_name="m3",
        created_at=earlier,
    )
    _decision(other, "satisfied", now)
    lonely = TaskFactory()
    _decision(lonely, "abandon", now)
    ValidationSnapshotFactory(task=lonely, status="accepted", created_at=now + timedelta(minutes=5))
    Feedback.objects.create(task=other, action="note", comment="just a note", created_at=now)

    groups = {(g.template_version, g.model_name): g for g in agreement_stats()}
    assert set(groups) == {("default@aaa", "m1"), ("terse@bbb", "m2")}
    main = groups[("default@aaa", "m1")]
    assert main.count == 7 and main.compared == 6
    # Agreements: 2 (accepted/satisfied) + 1 (insufficient/abandon) + 1 (rejected/revise) = 4 of 6.
    assert main.agreement_rate == pytest.approx(4 / 6)
    # Validator yes 3/6, human yes 3/6 → expected 0.5; kappa = (4/6 - 0.5) / 0.5 = 1/3.
    assert main.kappa == pytest.approx(1 / 3)
    assert main.confusion["accepted"] == {"satisfied": 2, "revise": 1, "abandon": 0}
    assert main.confusion["validator_error"] == {"satisfied": 1, "revise": 0, "abandon": 0}
    assert main.confusion["rejected"]["revise"] == 1
    small = groups[("terse@bbb", "m2")]
    assert small.count == 1 and small.agreement_rate == 1.0 and small.kappa is None


def test_cohen_kappa_edge_cases() -> None:
    """V10: perfect agreement is 1, chance-level is 0, no data is None."""
    assert cohen_kappa([]) is None
    assert cohen_kappa([(True, True), (False, False)]) == pytest.approx(1.0)
    assert cohen_kappa(
        [(True, True), (True, False), (False, True), (False, False)]
    ) == pytest.approx(0.0)
