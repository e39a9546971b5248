"""One writer per state field (issue 11): ``task_transition`` owns status, version,
attempt, lease and claim fields; claims change hands through services that record who,
when and the previous holder; the reaper marks a re-send in ``resent_at``, never in
``updated_at``; event logs cannot be changed or deleted in the admin; ``Run.status`` is
written by ``run_finish`` alone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tasks_app.models import ClaimEvent, OutboxJob, Run, RunStatus, Task, TaskEvent
from tasks_app.runtime import runs
from tasks_app.runtime.attempts import attempt_claim
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow import services, transitions
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.states import TaskStatus as S
from tests.api.conftest import bearer_client
from tests.factories import RunFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

JSON = "application/json"


def _row(task: Task) -> dict[str, Any]:
    return Task.objects.filter(pk=task.pk).values().get()


# --- task_transition refuses the fields it owns -----------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("status", S.CLOSED),
        ("version", 99),
        ("attempt_count", 7),
        ("lease_token", "forged"),
        ("heartbeat_at", None),
        ("claimed_by_id", None),
        ("claimed_at", None),
        ("assigned_to", None),
        ("resent_at", None),
        ("updated_at", None),
    ],
)
def test_transition_refuses_updates_to_a_field_it_owns_and_writes_nothing(
    field: str, value: Any
) -> None:
    """Issue 11: ``updates`` naming an owned field is a programming error (ValueError
    naming the field), raised before anything is written: the row and the event log are
    as they were, so the stored status cannot disagree with the last event."""
    task = TaskFactory(status=S.OPEN, final_answer="before")
    before = _row(task)

    for updates in ({field: value, "final_answer": "after"}, lambda locked: {field: value}):
        with pytest.raises(ValueError, match=field):
            transitions.task_transition(
                transitions.Transition(task_id=task.pk, to_status=S.RUNNING, updates=updates)
            )

    assert _row(task) == before
    assert not TaskEvent.objects.filter(task=task).exists()


def test_entering_running_starts_the_attempt_and_its_lease_leaving_releases_it() -> None:
    """Issue 11, X1: the transition itself writes the attempt number and the lease that
    the claim used to pass in ``updates``; the job's claim carries that lease."""
    task = TaskFactory(status=S.OPEN, attempt_count=0)

    claim = attempt_claim(task_id=task.pk)

    assert claim is not None
    task.refresh_from_db()
    assert task.status == S.RUNNING and task.attempt_count == claim.attempt_index == 1
    assert task.lease_token and task.lease_token == claim.lease_token
    assert task.heartbeat_at is not None
    transitions.task_transition(
        transitions.Transition(
            task_id=task.pk,
            to_status=S.VALIDATING,
            lease_token=claim.lease_token,
            updates={"final_answer": "An answer."},
        )
    )
    task.refresh_from_db()
    assert task.status == S.VALIDATING and task.final_answer == "An answer."
    assert task.lease_token == "" and task.heartbeat_at is None


def test_a_transition_returns_and_stores_the_rows_the_orm_reads_on_either_backend() -> None:
    """Issue 16: on PostgreSQL task_transition locks the row with its own SELECT ... FOR
    UPDATE and writes the task and its event in one statement (WITH moved AS (UPDATE
    ...) INSERT ...); on SQLite through the ORM. Either way the task it returns equals the
    row read back, field by field (JSON, lists and times converted alike), and the event
    holds what was asked."""
    actor = UserFactory(username="ada")
    task = TaskFactory(
        status=S.OPEN,
        plan={"steps": ["search", "read"], "depth": 2},
        validation_keywords=["budget", "EUR"],
    )
    with CaptureQueriesContext(connection) as captured:
        moved = transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=S.RUNNING,
                actor=actor,
                actor_kind="user",
                reason="started by hand",
                updates={"title": "Renamed", "final_answer": "draft"},
            )
        )
    stored = Task.objects.get(pk=task.pk)
    for field in Task._meta.concrete_fields:
        assert getattr(moved, field.attname) == getattr(stored, field.attname), field.name
    assert (stored.status, stored.title, stored.plan) == (
        S.RUNNING,
        "Renamed",
        {"steps": ["search", "read"], "depth": 2},
    )
    event = TaskEvent.objects.get(task=task)
    assert (event.from_status, event.to_status, event.actor_id, event.actor_kind) == (
        S.OPEN,
        S.RUNNING,
        actor.pk,
        "user",
    )
    assert (event.reason, event.attempt_index) == ("started by hand", 1)
    assert event.at is not None and event.at.tzinfo is not None
    statements = [q["sql"] for q in captured]
    on_postgres = connection.vendor == "postgresql"
    assert any(sql.startswith("WITH moved AS (UPDATE") for sql in statements) == on_postgres
    assert any(sql.endswith("FOR UPDATE") for sql in statements) == on_postgres


# --- Claims change hands through services that record it --------------------------------


def _second_reviewer(reviewer: Any) -> Any:
    ruth = UserFactory(username="ruth", is_staff=True)
    ruth.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return ruth


def test_claim_take_over_and_release_each_record_who_when_and_the_previous_holder(
    reviewer: Any, requester: Any
) -> None:
    """Issue 11, U3: POST /claim, POST /claim?force=true by a second reviewer and DELETE
    /claim each write a claim event (actor, time, previous holder), listed by
    GET /tasks/{id}/events beside the status changes, oldest first."""
    ruth = _second_reviewer(reviewer)
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1)
    rita_api, ruth_api = bearer_client(reviewer), bearer_client(ruth)
    url = f"/api/v1/tasks/{task.pk}/claim"
    started = timezone.now()

    assert rita_api.post(url, {}, content_type=JSON).status_code == 200
    assert ruth_api.post(url, {}, content_type=JSON).status_code == 409
    assert ruth_api.post(f"{url}?force=true", {}, content_type=JSON).status_code == 200
    assert ruth_api.delete(url).status_code == 200

    events = list(ClaimEvent.objects.filter(task=task))
    assert [(e.kind, e.actor, e.previous_holder) for e in events] == [
        ("claimed", reviewer, None),
        ("taken_over", ruth, reviewer),
        ("released", ruth, ruth),
    ]
    assert all(e.at >= started and e.task_status == S.NEEDS_REVIEW for e in events)
    assert events[1].previous_claimed_at == events[0].at  # rita's claim, from its start
    task.refresh_from_db()
    assert task.claimed_by is None and task.status == S.NEEDS_REVIEW
    assert not TaskEvent.objects.filter(task=task).exists(), "claims change no status"

    body = rita_api.get(f"/api/v1/tasks/{task.pk}/events").json()
    assert body["count"] == 3
    assert [(i["kind"], i["actor"], i["previous_holder"]) for i in body["items"]] == [
        ("claimed", "rita", None),
        ("taken_over", "ruth", "rita"),
        ("released", "ruth", "ruth"),
    ]
    assert body["items"][1]["from_status"] == body["items"][1]["to_status"] == "needs_review"


def test_the_task_page_history_shows_the_take_over_and_who_held_the_claim(
    client: Client, reviewer: Any, requester: Any
) -> None:
    """Issue 11: the task page's timeline lists claim events with the previous holder."""
    ruth = _second_reviewer(reviewer)
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1)
    services.task_claim(task_id=task.pk, reviewer=reviewer)
    client.force_login(ruth)
    client.post(reverse("task_claim", args=[task.pk]), {"op": "claim", "force": "1"})

    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()

    timeline = page[page.index('id="timeline-panel"') :]
    assert "Claimed</strong> by rita" in timeline
    assert "Claim taken over</strong> by ruth" in timeline and "(held by rita)" in timeline


def test_a_transition_that_ends_a_claim_records_it_and_a_release_of_nothing_writes_nothing(
    reviewer: Any, requester: Any
) -> None:
    """Issue 11: a task leaving review drops its claim with a claim event naming the
    holder and the person whose decision ended it; releasing an unheld claim is a no-op."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1)
    services.task_claim(task_id=task.pk, reviewer=reviewer)

    # The requester decides over the reviewer's live claim (force, as the UI offers).
    services.task_apply_feedback(task_id=task.pk, actor=requester, action="satisfied", force=True)

    task.refresh_from_db()
    assert task.status == S.CLOSED and task.claimed_by is None
    ended = ClaimEvent.objects.filter(task=task).last()
    assert ended is not None
    assert (ended.kind, ended.actor, ended.previous_holder) == ("released", requester, reviewer)
    assert ended.task_status == S.NEEDS_REVIEW and "closed" in ended.reason

    other = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    updated = _row(other)["updated_at"]
    services.task_release_claim(task_id=other.pk, reviewer=reviewer)
    assert not ClaimEvent.objects.filter(task=other).exists()
    assert _row(other)["updated_at"] == updated


# --- resent_at, not updated_at, marks a re-send ------------------------------------------


def test_a_resend_sets_resent_at_and_leaves_updated_at_to_mean_the_row_changed(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 11, issue 16: the reaper re-sends a lost job and records it in resent_at;
    updated_at keeps the time of the last real change (the API sorts by it), and the
    next re-send waits a lease period after resent_at."""
    settings.ATTEMPT_LEASE_SECONDS = 300
    now = timezone.now()
    old = now - timedelta(minutes=10)
    waiting = TaskFactory(status=S.OPEN)
    validating = TaskFactory(status=S.VALIDATING, attempt_count=1)
    Task.objects.filter(pk__in=[waiting.pk, validating.pk]).update(updated_at=old)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = attempt_reap(now=now)

    assert report.reenqueued == [waiting.pk] and report.revalidated == [validating.pk]
    assert len(callbacks) == 2
    for task in (waiting, validating):
        row = _row(task)
        assert row["resent_at"] == now
        assert row["updated_at"] == old
        assert row["job_id"]
    # Within a lease period of the re-send: nothing; after it: sent again.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert attempt_reap(now=now + timedelta(seconds=200)).reenqueued == []
    assert callbacks == []
    later = now + timedelta(seconds=301)
    # The re-sent jobs left the outbox and their messages were lost (issue 17: a job
    # still waiting in the outbox is held, never re-sent).
    OutboxJob.objects.update(published_at=now)
    with django_capture_on_commit_callbacks(execute=False):
        assert attempt_reap(now=later).reenqueued == [waiting.pk]
    assert _row(waiting)["resent_at"] == later and _row(waiting)["updated_at"] == old


# --- Event logs are append-only in the admin --------------------------------------------


def test_a_superuser_can_neither_change_nor_delete_task_or_claim_events_in_the_admin(
    reviewer: Any,
) -> None:
    """Issue 11, S3: no change or delete permission on TaskEvent or ClaimEvent, not even
    for a superuser; deleting the task (which would cascade) is refused too."""
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    task = TaskFactory(status=S.NEEDS_REVIEW)
    services.task_claim(task_id=task.pk, reviewer=reviewer)
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.ABANDONED, reason="kept")
    )
    event = TaskEvent.objects.get(task=task)
    claim_event = ClaimEvent.objects.filter(task=task).first()
    assert claim_event is not None
    client = Client()
    client.force_login(root)

    for name, pk in (("taskevent", event.pk), ("claimevent", claim_event.pk)):
        base = f"/admin/tasks_app/{name}/{pk}"
        assert client.post(f"{base}/delete/", {"post": "yes"}).status_code == 403
        assert client.post(f"{base}/change/", {"reason": "rewritten"}).status_code == 403
        client.post(
            f"/admin/tasks_app/{name}/",
            {"action": "delete_selected", "_selected_action": [pk], "post": "yes"},
        )
    deleting_task = client.post(f"/admin/tasks_app/task/{task.pk}/delete/", {"post": "yes"})
    assert deleting_task.status_code == 403

    assert Task.objects.filter(pk=task.pk).exists()
    event.refresh_from_db()
    assert event.reason == "kept"
    assert ClaimEvent.objects.filter(task=task).count() == 2


# --- Run.status has one writer ----------------------------------------------------------


def test_run_finish_ends_a_run_only_as_completed_or_failed() -> None:
    """Issue 11: ``run_finish`` is the one writer of Run.status; it never moves a run
    back to running or to an unknown status."""
    run = RunFactory(status=RunStatus.RUNNING)

    for status in (RunStatus.RUNNING, "cancelled"):
        with pytest.raises(ValueError, match="completed or failed"):
            runs.run_finish(run=run, status=status)
    runs.run_finish(run=run, status=RunStatus.COMPLETED, finish_reason="stop")

    stored = Run.objects.get(pk=run.pk)
    assert stored.status == RunStatus.COMPLETED and stored.finish_reason == "stop"


def test_run_finish_with_a_lost_lease_writes_nothing() -> None:
    """Issue 11, X1: fenced by the attempt's lease, ``run_finish`` of a worker whose
    lease was taken over raises LeaseLost and the run is left as it was."""
    task = TaskFactory(status=S.OPEN)
    claim = attempt_claim(task_id=task.pk)
    assert claim is not None
    run = RunFactory(task=task, attempt_index=claim.attempt_index, status=RunStatus.RUNNING)
    Task.objects.filter(pk=task.pk).update(lease_token="taken-over")

    with pytest.raises(LeaseLost):
        runs.run_finish(
            run=run,
            status=RunStatus.COMPLETED,
            fence=Fence(task_id=task.pk, lease_token=claim.lease_token),
            output_text="late",
        )

    stored = Run.objects.get(pk=run.pk)
    assert stored.status == RunStatus.RUNNING and stored.output_text == ""
    runs.run_finish(
        run=run,
        status=RunStatus.COMPLETED,
        fence=Fence(task_id=task.pk, lease_token="taken-over"),
        output_text="held",
    )
    assert Run.objects.get(pk=run.pk).output_text == "held"


def test_the_reaper_fails_a_dead_workers_running_run_through_run_finish(settings: Any) -> None:
    """Issue 11: the reaper's verdict on a dead worker's run is a Run.status write like
    any other (failed, lease_expired, finished_at = the sweep's time)."""
    settings.ATTEMPT_LEASE_SECONDS = 60
    task = TaskFactory(status=S.OPEN)
    claim = attempt_claim(task_id=task.pk)
    assert claim is not None
    run = RunFactory(task=task, attempt_index=claim.attempt_index, status=RunStatus.RUNNING)
    now = timezone.now() + timedelta(seconds=120)

    report = attempt_reap(now=now)

    assert report.requeued == [task.pk]
    stored = Run.objects.get(pk=run.pk)
    assert stored.status == RunStatus.FAILED and stored.finish_reason == "lease_expired"
    assert stored.finished_at == now and "worker stopped" in stored.error
