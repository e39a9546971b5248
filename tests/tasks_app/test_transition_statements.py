"""Issue 48: the hot transitions (an attempt's claim, its answer handed to validation,
the verdict) move the task in one statement on PostgreSQL, and write what the locked
transition writes; a change that needs the row read first still locks it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from project.errors import StaleAction
from tasks_app.models import ClaimEvent, OutboxJob, Task, TaskEvent
from tasks_app.runtime import attempts
from tasks_app.workflow import services, transitions
from tasks_app.workflow.models import TaskAgent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, UserFactory


def _task_statements(queries: CaptureQueriesContext) -> list[str]:
    """The statements that read or wrote the task's row (savepoints left out)."""
    return [q["sql"] for q in queries.captured_queries if '"tasks_app_task"' in q["sql"]]


@pytest.mark.django_db
@pytest.mark.postgres(reason="the one-statement transition is a data-modifying WITH")
def test_claim_answer_and_verdict_each_move_the_task_in_one_statement() -> None:
    """Issue 48: no SELECT ... FOR UPDATE before the update on the hot path; the claim,
    the answer's hand-over and the verdict each send one statement for the task."""
    task = TaskFactory(status=S.OPEN)
    with CaptureQueriesContext(connection) as claim_queries:
        claim = attempts.attempt_claim(task_id=task.pk, worker="w1")
    assert claim is not None
    with CaptureQueriesContext(connection) as answer_queries:
        transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=S.VALIDATING,
                expected_from=S.RUNNING,
                lease_token=claim.lease_token,
                reason="answered",
                updates={"final_answer": "42"},
            )
        )
    with CaptureQueriesContext(connection) as verdict_queries:
        transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=S.AWAITING_FEEDBACK,
                actor_kind="validator",
                expected_from=S.VALIDATING,
                expected_attempt=1,
                reason="accepted",
            )
        )
    for queries in (claim_queries, answer_queries, verdict_queries):
        statements = _task_statements(queries)
        assert len(statements) == 1, statements
        assert "FOR UPDATE" in statements[0] and "UPDATE" in statements[0]


@pytest.mark.django_db
def test_claim_writes_the_attempt_its_lease_and_its_event() -> None:
    """Issue 48: the claim written in one statement is the locked claim's: the next
    attempt number, a new lease, the heartbeat, the version, and the event naming the
    attempt and the worker; after a revision the number follows."""
    task = TaskFactory(status=S.OPEN, validation_claimed_at=timezone.now())
    claim = attempts.attempt_claim(task_id=task.pk, worker="w1")
    assert claim is not None
    task.refresh_from_db()
    assert (task.status, task.attempt_count, task.version) == (S.RUNNING, 1, 1)
    assert task.lease_token == claim.lease_token and len(task.lease_token) == 32
    assert task.heartbeat_at is not None
    assert claim.task is not None and claim.task.lease_token == claim.lease_token
    event = TaskEvent.objects.get(task=task)
    assert (event.from_status, event.to_status, event.reason, event.attempt_index) == (
        S.OPEN,
        S.RUNNING,
        "attempt 1 started on w1",
        1,
    )
    Task.objects.filter(pk=task.pk).update(status=S.NEEDS_REVISION)
    again = attempts.attempt_claim(task_id=task.pk)
    assert again is not None and again.attempt_index == 2
    assert again.lease_token != claim.lease_token
    latest = TaskEvent.objects.filter(task=task).latest("id")
    assert (latest.from_status, latest.reason, latest.attempt_index) == (
        S.NEEDS_REVISION,
        "attempt 2 started",
        2,
    )


@pytest.mark.django_db
def test_claim_of_an_interrupted_attempt_is_a_re_run_of_the_same_number() -> None:
    """Issue 48: a claim the single statement does not take (an attempt whose worker
    died) is judged on the locked row: same attempt number, the re-run in the reason."""
    task = TaskFactory(status=S.OPEN, attempt_count=1, attempt_interrupted=True, requeue_count=1)
    claim = attempts.attempt_claim(task_id=task.pk, worker="w2")
    assert claim is not None and claim.attempt_index == 1
    event = TaskEvent.objects.get(task=task)
    assert event.reason == "attempt 1 re-run 1 started on w2"
    task.refresh_from_db()
    assert not task.attempt_interrupted


@pytest.mark.django_db
def test_claim_of_an_external_task_writes_nothing() -> None:
    """Issue 48: a stray job never starts an attempt on a task its own agent runs."""
    task = TaskFactory(status=S.OPEN, agent=TaskAgent.EXTERNAL)
    assert attempts.attempt_claim(task_id=task.pk) is None
    task.refresh_from_db()
    assert (task.status, task.version, task.attempt_count) == (S.OPEN, 0, 0)
    assert not TaskEvent.objects.filter(task=task).exists()


@pytest.mark.django_db
def test_stale_answer_or_verdict_is_refused_and_writes_nothing() -> None:
    """Issue 48: a lease taken over, or a verdict for another attempt, is refused."""
    task = TaskFactory(status=S.RUNNING, lease_token="new-owner", attempt_count=2)
    with pytest.raises(StaleAction):
        transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=S.VALIDATING,
                expected_from=S.RUNNING,
                lease_token="old-owner",
            )
        )
    Task.objects.filter(pk=task.pk).update(status=S.VALIDATING)
    with pytest.raises(StaleAction):
        transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=S.NEEDS_REVIEW,
                expected_from=S.VALIDATING,
                expected_attempt=1,
            )
        )
    task.refresh_from_db()
    assert (task.status, task.version) == (S.VALIDATING, 0)
    assert not TaskEvent.objects.exists()


@pytest.mark.django_db
def test_leaving_review_under_a_claim_records_its_release() -> None:
    """Issue 48: a task leaving review while a person holds it ends the claim with a
    ClaimEvent naming the holder (the row is read first for that)."""
    reviewer = UserFactory()
    task = TaskFactory(status=S.NEEDS_REVIEW, claimed_by=reviewer, claimed_at=timezone.now())
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVISION, reason="revise")
    )
    task.refresh_from_db()
    assert task.claimed_by_id is None and task.claimed_at is None
    released = ClaimEvent.objects.get(task=task)
    assert released.previous_holder_id == reviewer.pk


@pytest.mark.django_db
def test_verdict_ends_the_validation_claim() -> None:
    """Issue 48: leaving ``validating`` clears the validation claim, in one statement as
    with the lock: the next attempt's validation claims afresh."""
    task = TaskFactory(status=S.VALIDATING, attempt_count=1, validation_claimed_at=timezone.now())
    moved = transitions.task_transition(
        transitions.Transition(
            task_id=task.pk, to_status=S.NEEDS_REVIEW, expected_from=S.VALIDATING, reason="r"
        )
    )
    assert moved.validation_claimed_at is None
    task.refresh_from_db()
    assert task.validation_claimed_at is None and task.lease_token == ""
    assert TaskEvent.objects.get(task=task).attempt_index == 1


@pytest.mark.django_db
def test_task_created_without_a_job_is_one_insert() -> None:
    """Issue 48: a task whose first attempt is not queued (an external agent's, the
    benchmark's) is one INSERT, with no transaction (nor savepoint) around it; a queued
    one commits with its job's outbox row."""
    owner = UserFactory()
    with CaptureQueriesContext(connection) as queries:
        task = services.task_create(owner=owner, request="What is the budget?", enqueue=False)
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["INSERT"]
    assert Task.objects.get(pk=task.pk).status == S.OPEN
    queued = services.task_create(owner=owner, request="What is the budget?")
    assert OutboxJob.objects.filter(job_id=queued.job_id).exists()
