"""The undo window of a decision (issue 26 item 1): a decision is pending for
``DECISION_UNDO_SECONDS``; nothing follows from it (status, next attempt, webhooks,
agreement) until ``decision_apply`` runs after the window; an undo inside the window
leaves the task as it was."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from evidence_app.trust.agreement import agreement_stats
from project.errors import Forbidden, StaleAction
from tasks_app.jobs import apply_decision_job
from tasks_app.models import (
    DecisionState,
    Feedback,
    OutboxJob,
    Task,
    TaskEvent,
    WebhookDelivery,
)
from tasks_app.notifications.webhooks import webhook_endpoint_create
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def window(settings: Any) -> int:
    settings.DECISION_UNDO_SECONDS = 30
    settings.WEBHOOK_ALLOW_PRIVATE = True
    return 30


def decided_count() -> int:
    return sum(group.count for group in agreement_stats())


def state_of(task: Task) -> tuple[str, int, int, int]:
    """Status, version, people's transitions and webhook deliveries of the task."""
    task.refresh_from_db()
    return (
        task.status,
        task.version,
        TaskEvent.objects.filter(task=task, actor_kind="user").count(),
        WebhookDelivery.objects.filter(task_id=task.pk).count(),
    )


def test_a_pending_decision_changes_nothing_until_it_applies(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: Satisfied is recorded as pending; the task stays in needs_review
    with no event, no webhook delivery and no agreement figure until the window closes;
    then the job applies it once (a second run does nothing)."""
    task = make_reviewable_task(requester)
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:1/hook", events=None)
    before = state_of(task)
    decision = services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")

    assert decision.state == DecisionState.PENDING
    assert 29 <= decision.seconds_left() <= 30
    assert state_of(task) == before
    assert decided_count() == 0
    job = OutboxJob.objects.get(name=services.APPLY_DECISION_JOB)
    assert job.args == [decision.pk] and job.not_before is not None
    # The job is never published before the window closes.
    assert timedelta(0) <= job.not_before - decision.applies_at < timedelta(seconds=1)

    assert services.decision_apply(feedback_id=decision.pk) == "not_due"
    assert state_of(task) == before

    due = decision.applies_at + timedelta(milliseconds=1)
    assert services.decision_apply(feedback_id=decision.pk, now=due) == "applied"
    status, version, people, deliveries = state_of(task)
    assert (status, version, people) == (S.CLOSED, before[1] + 1, 1)
    assert deliveries > before[3]
    assert decided_count() == 1
    assert services.decision_apply(feedback_id=decision.pk, now=due) == "done"
    assert state_of(task) == (status, version, people, deliveries)


def test_undo_inside_the_window_leaves_the_task_as_it_was(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: an undo inside the window marks the decision undone (by whom,
    when); the job that comes later applies nothing; no revision attempt is queued."""
    task = make_reviewable_task(requester)
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:1/hook", events=None)
    before = state_of(task)
    decision = services.task_decide(
        task_id=task.pk, actor=reviewer, action="revise", comment="Cite section 18."
    )
    undone = services.decision_undo(feedback_id=decision.pk, actor=reviewer)

    assert undone.state == DecisionState.UNDONE
    assert undone.undone_by == reviewer and undone.undone_at is not None
    later = decision.applies_at + timedelta(seconds=1)
    assert services.decision_apply(feedback_id=decision.pk, now=later) == "done"
    assert apply_decision_job.apply(args=[decision.pk]).get() == "done"
    assert state_of(task) == before
    assert not OutboxJob.objects.filter(name=services.RUN_ATTEMPT_JOB).exists()
    assert decided_count() == 0


def test_undo_after_the_window_is_refused_and_the_decision_still_applies(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: after the window an undo is refused with the time it applied,
    and changes nothing; the sweep then applies the decision its lost job did not."""
    task = make_reviewable_task(requester)
    decision = services.task_decide(task_id=task.pk, actor=reviewer, action="abandon")
    late = decision.applies_at + timedelta(seconds=1)

    with pytest.raises(StaleAction, match="Too late to undo"):
        services.decision_undo(feedback_id=decision.pk, actor=reviewer, now=late)
    decision.refresh_from_db()
    assert decision.state == DecisionState.PENDING and decision.undone_at is None

    assert services.decision_apply_due(now=decision.applies_at - timedelta(seconds=1)) == []
    assert services.decision_apply_due(now=late) == [decision.pk]
    task.refresh_from_db()
    assert task.status == S.ABANDONED
    with pytest.raises(StaleAction, match="Too late to undo"):
        services.decision_undo(feedback_id=decision.pk, actor=reviewer, now=late)


def test_only_the_author_or_staff_may_undo(
    window: int, requester: Any, other_requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: someone else's decision cannot be undone by a requester (nothing
    changes); a reviewer may undo the requester's own decision."""
    task = make_reviewable_task(requester)
    decision = services.task_decide(task_id=task.pk, actor=requester, action="satisfied")
    with pytest.raises(Forbidden):
        services.decision_undo(feedback_id=decision.pk, actor=other_requester)
    decision.refresh_from_db()
    assert decision.state == DecisionState.PENDING

    services.decision_undo(feedback_id=decision.pk, actor=reviewer)
    decision.refresh_from_db()
    assert decision.state == DecisionState.UNDONE and decision.undone_by == reviewer


def test_no_second_decision_while_one_is_pending(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: the task accepts no other decision during the window; after an
    undo it does."""
    task = make_reviewable_task(requester)
    first = services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")
    with pytest.raises(StaleAction, match="undo it first"):
        services.task_decide(task_id=task.pk, actor=requester, action="abandon")
    assert list(Feedback.objects.filter(task=task).values_list("pk", flat=True)) == [first.pk]

    services.decision_undo(feedback_id=first.pk, actor=reviewer)
    second = services.task_decide(task_id=task.pk, actor=requester, action="abandon")
    assert second.state == DecisionState.PENDING


def test_a_zero_window_applies_at_once(window: int, requester: Any, reviewer: Any) -> None:
    """Issue 26 item 1: ``undo_seconds=0`` (or DECISION_UNDO_SECONDS=0) applies the
    decision in the same transaction, with no job."""
    task = make_reviewable_task(requester)
    decision = services.task_decide(
        task_id=task.pk, actor=reviewer, action="satisfied", comment="Good.", undo_seconds=0
    )
    task.refresh_from_db()
    assert decision.state == DecisionState.APPLIED and task.status == S.CLOSED
    assert not OutboxJob.objects.filter(name=services.APPLY_DECISION_JOB).exists()


def _race(*calls: Any) -> list[str]:
    """Run the calls at once, each in its own thread and connection; their outcomes."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[str] = [""] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait()
            outcomes[i] = calls[i]()
        except StaleAction:
            outcomes[i] = "refused"
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


@pytest.mark.postgres(reason="row locks under real concurrency (SQLite serialises every writer)")
@pytest.mark.django_db(transaction=True)
def test_concurrent_decisions_leave_exactly_one_pending(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: eight decisions on one task at once: one is pending, seven are
    refused, one feedback row."""
    task = make_reviewable_task(requester)

    def decide() -> str:
        services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")
        return "pending"

    outcomes = _race(*[decide] * 8)
    assert sorted(outcomes) == ["pending"] + ["refused"] * 7
    assert Feedback.objects.filter(task=task).count() == 1


@pytest.mark.postgres(reason="row locks under real concurrency (SQLite serialises every writer)")
@pytest.mark.django_db(transaction=True)
def test_undo_racing_the_applying_job_never_does_both(
    window: int, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 1: an undo in the last millisecond and the job at the deadline, at
    once, five times: either the undo wins (task untouched) or the job does (task
    closed, the undo refused), never both and never neither."""
    for _ in range(5):
        task = make_reviewable_task(requester)
        decision = services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")
        due = decision.applies_at

        def undo(pk: int = decision.pk, at: Any = due) -> str:
            services.decision_undo(
                feedback_id=pk, actor=reviewer, now=at - timedelta(milliseconds=1)
            )
            return "undone"

        def apply(pk: int = decision.pk, at: Any = due) -> str:
            return services.decision_apply(feedback_id=pk, now=at)

        outcomes = _race(undo, apply)
        task.refresh_from_db()
        decision.refresh_from_db()
        if outcomes == ["undone", "done"]:
            assert task.status == S.NEEDS_REVIEW and decision.state == DecisionState.UNDONE
        else:
            assert outcomes == ["refused", "applied"], outcomes
            assert task.status == S.CLOSED and decision.state == DecisionState.APPLIED
