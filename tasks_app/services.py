"""Every write that changes a task's state (SPEC S3, S5, U3).

``task_transition`` is the only place that assigns ``Task.status``. It locks the row,
checks the one transition table, applies the change and writes a ``TaskEvent``, all in
one transaction.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tasks_app import states
from tasks_app.errors import ClaimConflict, IllegalTransition, InvalidInput, StaleAction
from tasks_app.models import (
    Feedback,
    FeedbackAction,
    Task,
    TaskEvent,
    ValidationOutcome,
    ValidationPolicy,
)
from tasks_app.states import TaskStatus


def attempt_enqueue(task_id: int) -> None:
    """Queue the next attempt of a task once the current transaction commits (a
    rolled-back transaction queues nothing). Redelivery is harmless: the job claims."""
    from tasks_app.jobs import run_attempt_job

    run_attempt_job.delay_on_commit(task_id)


@transaction.atomic
def task_transition(
    *,
    task_id: int,
    to_status: str,
    actor: Any = None,
    actor_kind: str = "system",
    reason: str = "",
    expected_from: str | set[str] | frozenset[str] | None = None,
    expected_version: int | None = None,
    lease_token: str | None = None,
    updates: dict[str, Any] | None = None,
) -> Task:
    """Move a task to ``to_status`` atomically and record a ``TaskEvent``.

    ``expected_from``/``expected_version`` refuse a change based on a stale view
    (StaleAction); ``lease_token`` fences a worker whose lease was taken over. An edge
    missing from the transition table raises ``IllegalTransition``.
    """
    # Row lock: two concurrent actions (two reviewers, a reviewer and a worker) are
    # serialised here, so the second one sees the first one's result and is judged on it.
    task = Task.objects.select_for_update().get(pk=task_id)
    from_status = task.status
    if lease_token is not None and task.lease_token != lease_token:
        raise StaleAction(f"Task {task_id}: the attempt lease was taken over; result discarded.")
    if expected_version is not None and task.version != expected_version:
        raise StaleAction(
            f"Task {task_id} changed since you loaded it (now '{from_status}'). Reload and retry."
        )
    if expected_from is not None:
        allowed = {expected_from} if isinstance(expected_from, str) else set(expected_from)
        if from_status not in allowed:
            raise StaleAction(
                f"Task {task_id} is '{from_status}', not {' or '.join(sorted(allowed))}."
            )
    if not states.can_transition(from_status, to_status):
        raise IllegalTransition(task_id=task_id, from_status=from_status, to_status=to_status)

    task.status = to_status
    task.version = task.version + 1
    changed = ["status", "version", "updated_at"]
    for field, value in (updates or {}).items():
        setattr(task, field, value)
        changed.append(field)
    if to_status not in states.EXECUTION_ACTIVE_STATUSES:
        # No attempt runs any more: release the lease so a late worker is fenced out.
        task.lease_token = ""
        task.heartbeat_at = None
        changed += ["lease_token", "heartbeat_at"]
    if to_status not in states.USER_ACTION_STATUSES:
        # A claim only means something while a person is expected to act.
        task.claimed_by = None
        task.claimed_at = None
        changed += ["claimed_by", "claimed_at"]
    task.save(update_fields=sorted(set(changed)))
    TaskEvent.objects.create(
        task=task,
        from_status=from_status,
        to_status=to_status,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_kind=actor_kind,
        reason=reason,
        attempt_index=task.attempt_count,
    )
    return task


@transaction.atomic
def task_create(
    *,
    owner: Any,
    request: str,
    title: str = "",
    rules: str = "",
    plan: dict[str, Any] | None = None,
    validation_policy: str = ValidationPolicy.ALWAYS,
    validation_keywords: list[str] | None = None,
    max_attempts: int | None = None,
    enqueue: bool = True,
) -> Task:
    """Create a task in ``open`` and queue its first attempt after commit."""
    request = request.strip()
    if not request:
        raise InvalidInput("request must not be empty")
    if validation_policy not in ValidationPolicy.values:
        raise InvalidInput(f"unknown validation_policy '{validation_policy}'")
    task = Task.objects.create(
        owner=owner,
        title=(title.strip() or _title_from(request))[:300],
        request=request,
        rules=rules,
        plan=plan or {},
        validation_policy=validation_policy,
        validation_keywords=validation_keywords or [],
        max_attempts=max_attempts or settings.MAX_ATTEMPTS,
    )
    if enqueue:
        attempt_enqueue(task.pk)
    return task


def _title_from(request: str) -> str:
    first_line = request.splitlines()[0]
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."


FEEDBACK_TARGETS = {
    FeedbackAction.SATISFIED: TaskStatus.CLOSED,
    FeedbackAction.REVISE: TaskStatus.NEEDS_REVISION,
    FeedbackAction.ABANDON: TaskStatus.ABANDONED,
}


@transaction.atomic
def task_apply_feedback(
    *,
    task_id: int,
    actor: Any,
    action: str,
    comment: str = "",
    expected_version: int | None = None,
    force: bool = False,
) -> Task:
    """Apply a person's decision (S5): satisfied → closed, revise → needs_revision and a
    new attempt, abandon → abandoned. User feedback is authoritative.
    """
    try:
        action = FeedbackAction(action)
    except ValueError:
        raise InvalidInput(
            f"unknown action '{action}' (use satisfied, revise or abandon)"
        ) from None
    if action == FeedbackAction.NOTE:
        raise InvalidInput("use task_add_note for notes")
    comment = comment.strip()
    if action == FeedbackAction.REVISE and not comment:
        raise InvalidInput("a revision needs a comment saying what to change")

    locked = Task.objects.select_for_update().get(pk=task_id)
    if (
        not force
        and locked.claim_is_live()
        and actor is not None
        and locked.claimed_by_id not in (None, getattr(actor, "pk", None))
    ):
        raise ClaimConflict(
            f"Task {task_id} is claimed by {locked.claimed_by}; take over the claim first."
        )

    from evidence_app.models import ValidationSnapshot, ValidationStatus

    last_validation = (
        ValidationSnapshot.objects.originals()
        .filter(task_id=task_id)
        .order_by("-created_at", "-id")
        .only("status")
        .first()
    )
    validator_status = last_validation.status if last_validation else ""
    updates: dict[str, Any] = {}
    if action == FeedbackAction.SATISFIED:
        # V3: a person closing an answer the validator did not accept is a force-accept.
        updates["validation_outcome"] = (
            ValidationOutcome.ACCEPTED
            if validator_status == ValidationStatus.ACCEPTED
            else ValidationOutcome.FORCE_ACCEPTED
        )
    task = task_transition(
        task_id=task_id,
        to_status=FEEDBACK_TARGETS[action],
        actor=actor,
        actor_kind="user",
        reason=f"{action.label}: {comment}" if comment else action.label,
        expected_version=expected_version,
        updates=updates,
    )
    Feedback.objects.create(
        task=task,
        author=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        comment=comment,
        attempt_index=task.attempt_count,
        validator_status=validator_status,
    )
    if action == FeedbackAction.REVISE:
        attempt_enqueue(task.pk)
    return task


@transaction.atomic
def task_add_note(*, task_id: int, actor: Any, comment: str) -> Feedback:
    comment = comment.strip()
    if not comment:
        raise InvalidInput("a note must not be empty")
    task = Task.objects.get(pk=task_id)
    return Feedback.objects.create(
        task=task,
        author=actor,
        action=FeedbackAction.NOTE,
        comment=comment,
        attempt_index=task.attempt_count,
    )


@transaction.atomic
def task_claim(*, task_id: int, reviewer: Any, force: bool = False) -> Task:
    """Claim a task for review (U3). A live claim by someone else is refused unless forced."""
    now = timezone.now()
    task = Task.objects.select_for_update().get(pk=task_id)
    if task.is_terminal:
        raise StaleAction(f"Task {task_id} is '{task.status}'; there is nothing to review.")
    if task.claim_is_live(now) and task.claimed_by_id != reviewer.pk and not force:
        raise ClaimConflict(f"Task {task_id} is already claimed by {task.claimed_by}.")
    task.claimed_by = reviewer
    task.claimed_at = now
    task.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
    return task


@transaction.atomic
def task_release_claim(*, task_id: int, reviewer: Any, force: bool = False) -> Task:
    task = Task.objects.select_for_update().get(pk=task_id)
    if task.claimed_by_id not in (None, reviewer.pk) and task.claim_is_live() and not force:
        raise ClaimConflict(f"Task {task_id} is claimed by {task.claimed_by}, not by you.")
    task.claimed_by = None
    task.claimed_at = None
    task.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
    return task
