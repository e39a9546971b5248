"""Every write that changes a task's state.

``task_transition`` is the only place that assigns ``Task.status``. It locks the row,
checks the one transition table, applies the change and writes a ``TaskEvent``, all in
one transaction. It also owns the fields that follow from the status: the
version, the attempt number and lease (written on entering ``running``, cleared on
leaving it) and the review claim (cleared when the task leaves review); its ``updates``
may not touch them. Claims change hands only through ``task_claim`` and
``task_release_claim``, which write a ``ClaimEvent``; ``Run.status`` only through
``run_finish``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from project.errors import (
    ClaimConflict,
    Forbidden,
    IllegalTransition,
    InvalidInput,
    StaleAction,
)
from project.logs import bind as bind_log_context
from project.roles import is_reviewer
from tasks_app.workflow import states
from tasks_app.workflow.creation_checks import creation_stores
from tasks_app.workflow.models import (
    ClaimEventKind,
    DecisionState,
    Feedback,
    FeedbackAction,
    ReviewVisit,
    Task,
    TaskAgent,
    ValidationOutcome,
    ValidationPolicy,
)
from tasks_app.workflow.outbox import outbox_send
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.transitions import (
    Transition,
    claim_event,
    refuse_stale,
    task_transition,
)
from tasks_app.workflow.verdicts import validator

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def new_job_id() -> str:
    """A Celery job id chosen before sending, so it can be stored with the task."""
    return str(uuid.uuid4())


# The runtime's attempt job (tasks_app.jobs registers it under this name; the outbox sends
# jobs by name).
RUN_ATTEMPT_JOB = "tasks_app.run_attempt"


def job_send_on_commit(
    job: Any, args: tuple[Any, ...], *, task_id: int, job_id: str = "", countdown: float = 0
) -> str:
    """Record ``job`` in the outbox in the current transaction and publish it once the
    transaction commits (a rolled-back transaction sends nothing; a broker that is down
    leaves it to the outbox relay) under a job id stored on the task, so the
    reaper can ask the broker whether it is still queued. Pass ``job_id`` when
    the caller already wrote it to the task row (saves a statement); ``job`` is a job or
    its name; ``countdown``
    delays the job that many seconds; returns the id."""
    if not job_id:
        job_id = new_job_id()
        Task.objects.filter(pk=task_id).update(job_id=job_id)
    name = job if isinstance(job, str) else job.name
    outbox_send(name, args, job_id=job_id, task_ref=task_id, countdown=countdown)
    return job_id


def job_enqueue(
    job: Any, args: tuple[Any, ...], *, task_ref: int | None = None, countdown: float = 0
) -> str:
    """Send ``job`` (a job or its name) through the outbox once the current transaction
        commits, for jobs whose id the task does not record (a replay, an OTLP trace's
        assembly), to run no earlier than ``countdown`` seconds from now; returns the job id
    ."""
    job_id = new_job_id()
    name = job if isinstance(job, str) else job.name
    outbox_send(name, args, job_id=job_id, task_ref=task_ref, countdown=countdown)
    return job_id


def attempt_enqueue(task_id: int, *, job_id: str = "") -> str:
    """Queue the next attempt of a task once the current transaction commits.
    Redelivery is harmless: the job claims. External tasks get no job: their agent
    submits attempts through the API; returns "" then."""
    if Task.objects.filter(pk=task_id, agent=TaskAgent.EXTERNAL).exists():
        return ""

    return job_send_on_commit(RUN_ATTEMPT_JOB, (task_id,), task_id=task_id, job_id=job_id)


def validation_enqueue(
    task_id: int, attempt_index: int, *, job_id: str = "", countdown: float = 0
) -> str:
    """Queue the validation of ``attempt_index`` once the current transaction commits
    (no earlier than ``countdown`` seconds from now), through the registered validator."""
    return validator().enqueue(task_id, attempt_index, job_id=job_id, countdown=countdown)


class TaskFields(TypedDict, total=False):
    """What a task may be created with besides its owner and request (``task_create``):
    absent, each takes its default (the settings' for ``max_attempts``). The audit rates,
    the reason for one below the floor and the second judge are passed to the checks
    registered in ``creation_checks`` and stored by the app that owns them, not on the
    task."""

    title: str
    rules: str
    plan: dict[str, Any] | None
    validation_policy: str
    validation_keywords: list[str] | None
    max_attempts: int | None
    agent: str
    audit_rate: float | None
    audit_reject_rate: float | None
    audit_rate_reason: str
    second_model: str


def task_create(
    *, owner: Any, request: str, enqueue: bool = True, **fields: Unpack[TaskFields]
) -> Task:
    """Create a task in ``open`` and queue its first attempt after commit; an external
    task waits for its agent to submit one through the API. The checks registered in
    ``creation_checks`` refuse what may not be created (an audit rate below the floor)
    and store, in the same transaction, what they keep beside the task."""
    # The checks other apps register (the audit settings are evidence_app's).
    stores = creation_stores(owner, fields)
    columns = _task_columns(request, fields)
    job_id = new_job_id() if enqueue and columns["agent"] == TaskAgent.INTERNAL else ""
    if job_id or stores:
        # The task, what is kept beside it and its first attempt's job (the job's outbox
        # row) commit together.
        with transaction.atomic():
            task = Task.objects.create(owner=owner, job_id=job_id, **columns)
            for store in stores:
                store(task)
            if job_id:
                attempt_enqueue(task.pk, job_id=job_id)
    else:
        # One INSERT is atomic on its own: no transaction around it (two statements less).
        task = Task.objects.create(owner=owner, job_id="", **columns)
    # The rest of this request's (or job's) log lines name the new task; outside one,
    # nothing is bound (it would outlive this call) and only this line names it.
    bind_log_context(task_id=task.pk)
    log.info("task %s created", task.pk, extra={"event": "task_created", "task_id": task.pk})
    return task


def _task_columns(request: str, fields: TaskFields) -> dict[str, Any]:
    """A new task's columns from what it is created with, checked (InvalidInput)."""
    request = request.strip()
    if not request:
        raise InvalidInput("request must not be empty")
    validation_policy = fields.get("validation_policy", ValidationPolicy.ALWAYS)
    if validation_policy not in ValidationPolicy.values:
        raise InvalidInput(f"unknown validation_policy '{validation_policy}'")
    agent = fields.get("agent", TaskAgent.INTERNAL)
    if agent not in TaskAgent.values:
        raise InvalidInput(f"unknown agent '{agent}' (use internal or external)")
    return {
        "title": (fields.get("title", "").strip() or _title_from(request))[:300],
        "request": request,
        "rules": fields.get("rules", ""),
        "plan": fields.get("plan") or {},
        "validation_policy": validation_policy,
        "validation_keywords": fields.get("validation_keywords") or [],
        "max_attempts": fields.get("max_attempts") or settings.MAX_ATTEMPTS,
        "agent": agent,
    }


def _title_from(request: str) -> str:
    first_line = request.splitlines()[0]
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."


FEEDBACK_TARGETS = {
    FeedbackAction.SATISFIED: TaskStatus.CLOSED,
    FeedbackAction.REVISE: TaskStatus.NEEDS_REVISION,
    FeedbackAction.ABANDON: TaskStatus.ABANDONED,
}


# The job that applies a pending decision when its undo window closes.
APPLY_DECISION_JOB = "tasks_app.apply_decision"


def _decision_action(action: str, comment: str) -> FeedbackAction:
    try:
        decided = FeedbackAction(action)
    except ValueError:
        raise InvalidInput(
            f"unknown action '{action}' (use satisfied, revise or abandon)"
        ) from None
    if decided == FeedbackAction.NOTE:
        raise InvalidInput("use task_add_note for notes")
    if decided == FeedbackAction.REVISE and not comment:
        raise InvalidInput("a revision needs a comment saying what to change")
    return decided


def _refuse_decision(locked: Task, *, actor: Any, action: str, force: bool) -> None:
    """A decision the locked task cannot take now: someone else's live claim, a decision
    already waiting in its undo window, or a status it cannot leave for ``action``."""
    if (
        not force
        and locked.claim_is_live()
        and actor is not None
        and locked.claimed_by_id not in (None, getattr(actor, "pk", None))
    ):
        raise ClaimConflict(
            f"Task {locked.pk} is claimed by {locked.claimed_by}; take over the claim first."
        )
    waiting = Feedback.objects.pending().filter(task_id=locked.pk).first()
    if waiting is not None:
        raise StaleAction(
            f"Task {locked.pk} already has a decision ({waiting.get_action_display()}) "
            f"applying in {waiting.seconds_left()} s; undo it first."
        )
    target = FEEDBACK_TARGETS[FeedbackAction(action)]
    if not states.can_transition(locked.status, target):
        raise IllegalTransition(task_id=locked.pk, from_status=locked.status, to_status=target)


@transaction.atomic
def task_decide(
    *,
    task_id: int,
    actor: Any,
    action: str,
    comment: str = "",
    expected_version: int | None = None,
    force: bool = False,
    undo_seconds: float | None = None,
    claim_labels: Sequence[Mapping[str, Any]] = (),
    validation_id: int | None = None,
) -> Feedback:
    """Record a person's decision. With an undo window
    (``undo_seconds``, by default ``DECISION_UNDO_SECONDS``) it is ``pending`` and nothing
    follows from it until ``applies_at``, when the ``tasks_app.apply_decision`` job (or
    the sweep) applies it through ``task_transition``; ``decision_undo`` cancels it
    before then. With 0 it applies at once. Returns the feedback row.

    ``claim_labels`` (the page's and the API's alike) are the person's verdicts on the
    claims of the validation they decided on (``validation_id``, when given: another
    one is StaleAction); the validator stores them in this transaction, so a refused
    label refuses the decision too and nothing is half written."""
    comment = comment.strip()
    decided = _decision_action(action, comment)
    seconds = settings.DECISION_UNDO_SECONDS if undo_seconds is None else undo_seconds
    # Row lock: a second decision on the same task (a double click, two reviewers) waits
    # here and then finds this one pending, and is refused.
    locked = Task.objects.select_for_update().get(pk=task_id)
    _refuse_decision(locked, actor=actor, action=decided, force=force)
    refuse_stale(
        locked,
        lease_token=None,
        expected_version=expected_version,
        expected_attempt=None,
        expected_from=None,
    )
    now = timezone.now()
    pending = seconds > 0
    feedback = Feedback.objects.create(
        task=locked,
        author=actor if getattr(actor, "is_authenticated", False) else None,
        action=decided,
        comment=comment,
        attempt_index=locked.attempt_count,
        validator_status=_validator_status(task_id),
        state=DecisionState.PENDING if pending else DecisionState.APPLIED,
        applies_at=now + timedelta(seconds=seconds) if pending else None,
    )
    if claim_labels:
        validator().decision_claim_labels_record(
            feedback, claim_labels, actor=actor, validation_id=validation_id
        )
    if pending:
        job_enqueue(APPLY_DECISION_JOB, (feedback.pk,), task_ref=task_id, countdown=seconds)
        log.info(
            "task %s: %s pending until %s",
            task_id,
            decided,
            feedback.applies_at,
            extra={"event": "decision_pending", "task_id": task_id},
        )
    else:
        _decision_transition(feedback, expected_version=expected_version)
    return feedback


def _validator_status(task_id: int) -> str:
    last_validation = validator().verdict(task_id)
    return last_validation.status if last_validation else ""


def _decision_transition(feedback: Feedback, *, expected_version: int | None = None) -> Task:
    """The transition a decision causes, with its event and its webhooks (its feedback
    row is already written: the webhook payload carries the person's comment)."""
    action = FeedbackAction(feedback.action)
    updates: dict[str, Any] = {}
    if action == FeedbackAction.SATISFIED:
        # V3: a person closing an answer the validator did not accept is a force-accept.
        last_validation = validator().verdict(feedback.task_id)
        updates["validation_outcome"] = (
            ValidationOutcome.ACCEPTED
            if last_validation is not None and last_validation.passed
            else ValidationOutcome.FORCE_ACCEPTED
        )
    comment = feedback.comment
    task = task_transition(
        Transition(
            task_id=feedback.task_id,
            to_status=FEEDBACK_TARGETS[action],
            actor=feedback.author,
            actor_kind="user",
            reason=f"{action.label}: {comment}" if comment else action.label,
            expected_version=expected_version,
            updates=updates,
        )
    )
    if action == FeedbackAction.REVISE:
        attempt_enqueue(task.pk)
    return task


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
    """Apply a person's decision at once, with no undo window: satisfied → closed,
    revise → needs_revision and a new attempt, abandon → abandoned."""
    task_decide(
        task_id=task_id,
        actor=actor,
        action=action,
        comment=comment,
        expected_version=expected_version,
        force=force,
        undo_seconds=0,
    )
    return Task.objects.get(pk=task_id)


@transaction.atomic
def decision_apply(*, feedback_id: int, now: Any = None) -> str:
    """Apply a pending decision whose window has closed. Idempotent: returns
    ``applied``, ``not_due`` (its time has not come), ``done`` (already applied, undone
    or void), ``gone`` (no such row) or ``void`` (the task had moved on: nothing done)."""
    now = now or timezone.now()
    # Row lock: the job, the sweep and an undo racing for one decision are serialised;
    # whoever comes second finds it no longer pending.
    feedback = (
        Feedback.objects.select_for_update(of=("self",))
        .select_related("author")
        .filter(pk=feedback_id)
    ).first()
    if feedback is None:
        return "gone"
    if feedback.state != DecisionState.PENDING:
        return "done"
    if feedback.applies_at is not None and feedback.applies_at > now:
        return "not_due"
    try:
        with transaction.atomic():
            feedback.state = DecisionState.APPLIED
            feedback.save(update_fields=["state"])
            _decision_transition(feedback)
    except (IllegalTransition, StaleAction) as exc:
        feedback.state = DecisionState.VOID
        feedback.save(update_fields=["state"])
        log.warning(
            "task %s: pending decision %s not applied: %s", feedback.task_id, feedback_id, exc
        )
        return "void"
    return "applied"


def decision_apply_due(*, now: Any = None) -> list[int]:
    """Apply every pending decision whose window has closed (the periodic sweep: a lost
    job or a broker outage never leaves one pending); returns the ids applied."""
    now = now or timezone.now()
    due = list(
        Feedback.objects.pending()
        .filter(applies_at__lte=now)
        .order_by("applies_at", "id")
        .values_list("pk", flat=True)[:500]
    )
    return [pk for pk in due if decision_apply(feedback_id=pk, now=now) == "applied"]


@transaction.atomic
def decision_undo(
    *, feedback_id: int, actor: Any, task_id: int | None = None, now: Any = None
) -> Feedback:
    """Cancel a pending decision inside its window, by its author or a reviewer:
    nothing it would have caused happens, and the timeline says who undid it. After the
    window (or when it is not pending) StaleAction; someone else's, Forbidden."""
    now = now or timezone.now()
    # Row lock: the applying job waits, then finds the decision undone (or the undo
    # waits for the job, then finds it applied and refuses).
    found = Feedback.objects.select_for_update().filter(pk=feedback_id)
    if task_id is not None:
        found = found.filter(task_id=task_id)
    feedback = found.get()  # Feedback.DoesNotExist: no such decision (on that task)
    if feedback.author_id != getattr(actor, "pk", None) and not is_reviewer(actor):
        raise Forbidden("Only the person who decided, or a reviewer, can undo a decision.")
    if feedback.state == DecisionState.UNDONE:
        raise StaleAction(f"This decision on task {feedback.task_id} was already undone.")
    if feedback.state != DecisionState.PENDING or (
        feedback.applies_at is not None and feedback.applies_at <= now
    ):
        raise StaleAction(
            f"Too late to undo: the {feedback.get_action_display().lower()} decision on "
            f"task {feedback.task_id} applied"
            + (f" at {feedback.applies_at:%H:%M:%S} UTC." if feedback.applies_at else ".")
        )
    feedback.state = DecisionState.UNDONE
    feedback.undone_by = actor if getattr(actor, "is_authenticated", False) else None
    feedback.undone_at = now
    feedback.save(update_fields=["state", "undone_by", "undone_at"])
    log.info(
        "task %s: %s decision undone",
        feedback.task_id,
        feedback.action,
        extra={"event": "decision_undone", "task_id": feedback.task_id},
    )
    return feedback


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
    """Claim a task for review. A live claim by someone else is refused unless
    forced: then it is a take-over. Writes a ``ClaimEvent`` naming the previous holder."""
    now = timezone.now()
    # Row lock: two reviewers claiming at once are serialised, so the second one sees
    # the first one's claim and is refused (or takes it over, and says so).
    task = Task.objects.select_for_update().get(pk=task_id)
    if task.is_terminal:
        raise StaleAction(f"Task {task_id} is '{task.status}'; there is nothing to review.")
    someone_else_holds = task.claim_is_live(now) and task.claimed_by_id != reviewer.pk
    if someone_else_holds and not force:
        raise ClaimConflict(f"Task {task_id} is already claimed by {task.claimed_by}.")
    claim_event(
        task,
        kind=ClaimEventKind.TAKEN_OVER if someone_else_holds else ClaimEventKind.CLAIMED,
        actor=reviewer,
        at=now,
    )
    task.claimed_by = reviewer
    task.claimed_at = now
    task.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
    return task


@transaction.atomic
def task_release_claim(*, task_id: int, reviewer: Any, force: bool = False) -> Task:
    """Give up a claim; someone else's live claim only with ``force``. Writes a
    ``ClaimEvent``; releasing when nobody holds the claim changes nothing."""
    task = Task.objects.select_for_update().get(pk=task_id)
    if task.claimed_by_id not in (None, reviewer.pk) and task.claim_is_live() and not force:
        raise ClaimConflict(f"Task {task_id} is claimed by {task.claimed_by}, not by you.")
    if task.claimed_by_id is None:
        return task
    claim_event(task, kind=ClaimEventKind.RELEASED, actor=reviewer)
    task.claimed_by = None
    task.claimed_at = None
    task.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
    return task


@transaction.atomic
def task_assign(*, task_id: int, assignee: Any | None, actor: Any) -> Task:
    """Assign a task to a reviewer, or clear the assignment with ``assignee=None``.
    Only open tasks can be assigned; the assignment is advice, not a lock."""

    task = Task.objects.select_for_update().get(pk=task_id)
    if task.is_terminal:
        raise StaleAction(f"Task {task_id} is '{task.status}'; there is nothing to assign.")
    if assignee is not None and not is_reviewer(assignee):
        raise InvalidInput(f"{assignee} is not a reviewer.")
    task.assigned_to = assignee
    task.save(update_fields=["assigned_to", "updated_at"])
    return task


def review_visit_record(*, task: Task, reviewer: Any) -> None:
    """Record that ``reviewer`` opened ``task``'s review page for its current attempt, if
    the task waits for review and no visit of that attempt by them exists yet. One
    INSERT that skips an existing row (ON CONFLICT DO NOTHING): a later visit never moves
    the first one, and two tabs opening at once cannot raise on the unique constraint."""
    if task.status != TaskStatus.NEEDS_REVIEW:
        return
    ReviewVisit.objects.bulk_create(
        [ReviewVisit(task_id=task.pk, attempt_index=task.attempt_count, reviewer=reviewer)],
        ignore_conflicts=True,
    )


# --- Runs ------------------------------------------------------------------------------
