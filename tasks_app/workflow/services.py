"""Every write that changes a task's state (S3, S5, U3).

``task_transition`` is the only place that assigns ``Task.status``. It locks the row,
checks the one transition table, applies the change and writes a ``TaskEvent``, all in
one transaction. It also owns the fields that follow from the status (issue 11): the
version, the attempt number and lease (written on entering ``running``, cleared on
leaving it) and the review claim (cleared when the task leaves review); its ``updates``
may not touch them. Claims change hands only through ``task_claim`` and
``task_release_claim``, which write a ``ClaimEvent``; ``Run.status`` only through
``run_finish``.
"""

from __future__ import annotations

import functools
import logging
import secrets
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from project.errors import (
    ClaimConflict,
    Forbidden,
    IllegalTransition,
    InvalidInput,
    StaleAction,
)
from project.llm.registry import resolve_model
from project.logs import bind as bind_log_context
from project.roles import is_operator, is_reviewer
from tasks_app.workflow import states
from tasks_app.workflow.models import (
    ClaimEvent,
    ClaimEventKind,
    DecisionState,
    Feedback,
    FeedbackAction,
    ReviewVisit,
    Task,
    TaskAgent,
    TaskEvent,
    ValidationOutcome,
    ValidationPolicy,
)
from tasks_app.workflow.outbox import outbox_send
from tasks_app.workflow.signals import task_transitioned
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.verdicts import validator

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# Fields only task_transition (status, version, attempt, lease, claim), the claim and
# assignment services and the reaper's re-send write: ``updates`` naming one is a bug.
TRANSITION_OWNED_FIELDS = frozenset(
    {
        "status",
        "version",
        "attempt_count",
        "attempt_interrupted",
        "lease_token",
        "heartbeat_at",
        "claimed_by",
        "claimed_by_id",
        "claimed_at",
        "assigned_to",
        "assigned_to_id",
        "resent_at",
        "updated_at",
    }
)


def _refuse_owned(updates: dict[str, Any]) -> None:
    owned = sorted(TRANSITION_OWNED_FIELDS.intersection(updates))
    if owned:
        raise ValueError(
            f"task_transition(updates=...) may not set {', '.join(owned)}: the transition "
            "service (or the claim service) is the one writer of those fields"
        )


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
    leaves it to the outbox relay, issue 17) under a job id stored on the task, so the
    reaper can ask the broker whether it is still queued (issue 16). Pass ``job_id`` when
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
    (issue 17)."""
    job_id = new_job_id()
    name = job if isinstance(job, str) else job.name
    outbox_send(name, args, job_id=job_id, task_ref=task_ref, countdown=countdown)
    return job_id


def attempt_enqueue(task_id: int, *, job_id: str = "") -> str:
    """Queue the next attempt of a task once the current transaction commits.
    Redelivery is harmless: the job claims. External tasks get no job: their agent
    submits attempts through the API (issue 14); returns "" then."""
    if Task.objects.filter(pk=task_id, agent=TaskAgent.EXTERNAL).exists():
        return ""

    return job_send_on_commit(RUN_ATTEMPT_JOB, (task_id,), task_id=task_id, job_id=job_id)


def validation_enqueue(
    task_id: int, attempt_index: int, *, job_id: str = "", countdown: float = 0
) -> str:
    """Queue the validation of ``attempt_index`` once the current transaction commits
    (no earlier than ``countdown`` seconds from now), through the registered validator."""
    return validator().enqueue(task_id, attempt_index, job_id=job_id, countdown=countdown)


@transaction.atomic
def task_transition(
    *,
    task_id: int,
    to_status: str,
    actor: Any = None,
    actor_kind: str = "system",
    reason: str | Callable[[Task], str] = "",
    expected_from: str | set[str] | frozenset[str] | None = None,
    expected_version: int | None = None,
    expected_attempt: int | None = None,
    lease_token: str | None = None,
    updates: dict[str, Any] | Callable[[Task], dict[str, Any]] | None = None,
    on_applied: Callable[[Task], object] | None = None,
    rerun: bool = False,
) -> Task:
    """Move a task to ``to_status`` atomically and record a ``TaskEvent``.

    ``expected_from``/``expected_version``/``expected_attempt`` refuse a change based on
    a stale view (StaleAction); ``lease_token`` fences a worker whose lease was taken
    over. An edge missing from the transition table raises ``IllegalTransition``.
    Entering ``running`` starts the next attempt: ``attempt_count + 1`` and a new lease
    (read it from the returned task); ``running`` -> ``running`` (a takeover) keeps the
    attempt and writes a new lease, and so does the claim after ``rerun=True`` (the
    reaper's ``running`` -> ``open`` of an attempt whose worker died: an infrastructure
    re-run, not a new attempt, issue 17); any other status releases the lease. Leaving
    review ends a claim (with a ``ClaimEvent``). ``reason`` and ``updates`` may be
    functions of the locked row; ``updates`` naming a field this service owns
    (``TRANSITION_OWNED_FIELDS``) raises ValueError and nothing is written.
    ``on_applied`` writes what must commit with the change (a verdict), in the same
    transaction, so hot paths need no outer transaction and no savepoint.
    """
    if isinstance(updates, dict):
        _refuse_owned(updates)
    # Row lock: two concurrent actions (two reviewers, a reviewer and a worker) are
    # serialised here, so the second one sees the first one's result and is judged on it.
    task = _lock_task(task_id)
    from_status = task.status
    _refuse_stale(
        task,
        lease_token=lease_token,
        expected_version=expected_version,
        expected_attempt=expected_attempt,
        expected_from=expected_from,
    )
    if not states.can_transition(from_status, to_status):
        raise IllegalTransition(task_id=task_id, from_status=from_status, to_status=to_status)

    task.status = to_status
    task.version = task.version + 1
    changed = ["status", "version", "updated_at"]
    if callable(updates):
        updates = updates(task)
        _refuse_owned(updates)
    if callable(reason):
        reason = reason(task)
    for field, value in (updates or {}).items():
        setattr(task, field, value)
        changed.append(field)
    if to_status not in states.USER_ACTION_STATUSES:
        changed += _release_review_claim(
            task, from_status=from_status, actor=actor, actor_kind=actor_kind
        )
    changed += _move_lease(task, from_status=from_status, rerun=rerun)
    if from_status == TaskStatus.VALIDATING and to_status != TaskStatus.VALIDATING:
        # The validation (if any) is over: the next attempt's validation claims afresh.
        task.validation_claimed_at = None
        changed.append("validation_claimed_at")
    _save_with_event(
        task,
        sorted(set(changed)),
        TaskEvent(
            task=task,
            from_status=from_status,
            to_status=to_status,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            actor_kind=actor_kind,
            reason=reason,
            attempt_index=task.attempt_count,
        ),
    )
    if on_applied is not None:
        on_applied(task)
    # What follows the change subscribes to it (webhook events, issue 14); in this
    # transaction and after on_applied, whose verdict a subscriber may read.
    task_transitioned.send(
        sender=Task,
        task=task,
        from_status=from_status,
        to_status=to_status,
        actor_kind=actor_kind,
        reason=reason,
    )
    log.info(
        "task %s: %s -> %s",
        task_id,
        from_status,
        to_status,
        extra={
            "event": "transition",
            "task_id": task_id,
            "from_status": from_status,
            "to_status": to_status,
            "actor_kind": actor_kind,
        },
    )
    return task


def _refuse_stale(
    task: Task,
    *,
    lease_token: str | None,
    expected_version: int | None,
    expected_attempt: int | None,
    expected_from: str | set[str] | frozenset[str] | None,
) -> None:
    """StaleAction when the locked row is not what the caller's change was based on."""
    if lease_token is not None and task.lease_token != lease_token:
        raise StaleAction(f"Task {task.pk}: the attempt lease was taken over; result discarded.")
    if expected_version is not None and task.version != expected_version:
        raise StaleAction(
            f"Task {task.pk} changed since you loaded it (now '{task.status}'). Reload and retry."
        )
    if expected_attempt is not None and task.attempt_count != expected_attempt:
        raise StaleAction(
            f"Task {task.pk} is at attempt {task.attempt_count}, not {expected_attempt}."
        )
    if expected_from is not None:
        allowed = {expected_from} if isinstance(expected_from, str) else set(expected_from)
        if task.status not in allowed:
            raise StaleAction(
                f"Task {task.pk} is '{task.status}', not {' or '.join(sorted(allowed))}."
            )


def _release_review_claim(
    task: Task, *, from_status: str, actor: Any, actor_kind: str
) -> list[str]:
    """A claim only means something while a person is expected to act: end it (with a
    ``ClaimEvent`` when there was one). Returns the fields changed."""
    if task.claimed_by_id is not None:
        _claim_event(
            task,
            kind=ClaimEventKind.RELEASED,
            actor=actor,
            actor_kind=actor_kind,
            reason=f"the task moved to {task.status}",
            task_status=from_status,
        )
    task.claimed_by = None
    task.claimed_at = None
    return ["claimed_by", "claimed_at"]


def _move_lease(task: Task, *, from_status: str, rerun: bool) -> list[str]:
    """The attempt's lease after the change (X1, issue 17); returns the fields changed."""
    if task.status == TaskStatus.RUNNING:
        # The next attempt starts, under a lease of its own: its worker holds the token,
        # refreshes the heartbeat, and every result write is fenced by the token (X1).
        # running -> running is a takeover of the same attempt (issue 17): a new lease
        # fences the previous worker out; the attempt number stays.
        if from_status != TaskStatus.RUNNING and not task.attempt_interrupted:
            task.attempt_count = task.attempt_count + 1
        task.attempt_interrupted = False
        task.lease_token = secrets.token_hex(16)
        task.heartbeat_at = timezone.now()
        return ["attempt_count", "attempt_interrupted", "lease_token", "heartbeat_at"]
    # No attempt runs any more (the answer is with the validator, or the task moved on):
    # release the lease so a late worker is fenced out.
    task.lease_token = ""
    task.heartbeat_at = None
    changed = ["lease_token", "heartbeat_at"]
    if rerun or task.attempt_interrupted:
        # Only an attempt re-queued after its worker died is re-run (issue 17).
        task.attempt_interrupted = rerun and from_status == TaskStatus.RUNNING
        changed.append("attempt_interrupted")
    return changed


@functools.cache
def _task_loader() -> tuple[str, list[str], list[tuple[int, Any, list[Any]]]]:
    """(``SELECT ... FOR UPDATE`` of one task, its attnames, the converters per column)
    as the ORM's compiler would use them, built once per process."""
    quote = connection.ops.quote_name
    fields: list[Any] = list(Task._meta.concrete_fields)
    sql = (
        f"SELECT {', '.join(quote(f.column) for f in fields)} "
        f'FROM {quote(Task._meta.db_table)} WHERE "id" = %s FOR UPDATE'
    )
    converters = []
    for i, field in enumerate(fields):
        col = field.cached_col
        found = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
        if found:
            converters.append((i, col, found))
    return sql, [f.attname for f in fields], converters


def _lock_task(task_id: int) -> Task:
    """``Task.objects.select_for_update().get(pk=task_id)``; on PostgreSQL from a query
    built once (issue 16: the ORM compiled it again on every transition)."""
    if connection.vendor != "postgresql":
        return Task.objects.select_for_update().get(pk=task_id)
    sql, names, converters = _task_loader()
    with connection.cursor() as cur:
        cur.execute(sql, [task_id])
        row = cur.fetchone()
    if row is None:
        raise Task.DoesNotExist(f"Task matching query does not exist (pk={task_id}).")
    values = list(row)
    for i, col, functions in converters:
        for convert in functions:
            values[i] = convert(values[i], col, connection)
    return Task.from_db(connection.alias, names, values)


@functools.cache
def _event_insert() -> tuple[list[Any], str]:
    """(fields, ``INSERT INTO taskevent ... SELECT ... FROM moved``) with typed
    placeholders, built once per process."""
    quote = connection.ops.quote_name
    fields: list[Any] = [f for f in TaskEvent._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(f"%s::{f.db_type(connection)}" for f in fields)
    sql = (
        f"INSERT INTO {quote(TaskEvent._meta.db_table)} ({columns}) "
        f'SELECT {values} FROM moved RETURNING "id"'
    )
    return fields, sql


def _save_with_event(task: Task, update_fields: list[str], event: TaskEvent) -> None:
    """``task.save(update_fields=...)`` and ``event.save()``. On PostgreSQL one statement
    (issue 16): ``WITH moved AS (UPDATE task ... RETURNING id) INSERT INTO taskevent
    ... FROM moved``, without the ORM's per-call compilation. The caller holds the
    row lock, so the update always finds the row."""
    if connection.vendor != "postgresql":
        task.save(update_fields=update_fields)
        event.save()
        return
    quote = connection.ops.quote_name
    meta = Task._meta
    assignments = []
    params: list[Any] = []
    for name in update_fields:
        field: Any = meta.get_field(name)
        # pre_save fills auto_now (updated_at) on the instance, as save() would.
        value = field.pre_save(task, add=False)
        assignments.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    params.append(task.pk)
    fields, insert = _event_insert()
    params += [f.get_db_prep_save(f.pre_save(event, add=True), connection) for f in fields]
    with connection.cursor() as cur:
        cur.execute(
            f"WITH moved AS (UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} "
            f'WHERE "id" = %s RETURNING "id") {insert}',
            params,
        )
        row = cur.fetchone()
    if row is None:
        raise DatabaseError(f"task {task.pk}: the transition's update found no row")
    event.pk = row[0]
    event._state.adding = False


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
    agent: str = TaskAgent.INTERNAL,
    enqueue: bool = True,
    audit_rate: float | None = None,
    audit_reject_rate: float | None = None,
    audit_rate_reason: str = "",
    second_model: str = "",
) -> Task:
    """Create a task in ``open`` and queue its first attempt after commit; an external
    task (issue 14) waits for its agent to submit one through the API. ``audit_rate``
    and ``audit_reject_rate`` (0..1, None: the settings) are the shares of its automatic
    verdicts drawn for a blind audit: a requester may raise them above the deployment's
    floor (the settings), never lower them; only an operator may, with
    ``audit_rate_reason``, and the exception is recorded (who, when, why)."""
    exception = _audit_rate_exception(
        owner, audit_rate=audit_rate, audit_reject_rate=audit_reject_rate, reason=audit_rate_reason
    )
    request = request.strip()
    if not request:
        raise InvalidInput("request must not be empty")
    second_model = second_model_checked(second_model)
    if validation_policy not in ValidationPolicy.values:
        raise InvalidInput(f"unknown validation_policy '{validation_policy}'")
    if agent not in TaskAgent.values:
        raise InvalidInput(f"unknown agent '{agent}' (use internal or external)")
    job_id = new_job_id() if enqueue and agent == TaskAgent.INTERNAL else ""
    task = Task.objects.create(
        owner=owner,
        job_id=job_id,
        title=(title.strip() or _title_from(request))[:300],
        request=request,
        rules=rules,
        plan=plan or {},
        validation_policy=validation_policy,
        validation_keywords=validation_keywords or [],
        max_attempts=max_attempts or settings.MAX_ATTEMPTS,
        agent=agent,
        audit_rate=audit_rate,
        audit_reject_rate=audit_reject_rate,
        second_model=second_model,
        **exception,
    )
    if enqueue and agent == TaskAgent.INTERNAL:
        attempt_enqueue(task.pk, job_id=job_id)
    # The rest of this request's (or job's) log lines name the new task; outside one,
    # nothing is bound (it would outlive this call) and only this line names it.
    bind_log_context(task_id=task.pk)
    log.info("task %s created", task.pk, extra={"event": "task_created", "task_id": task.pk})
    return task


def _audit_rate_exception(
    owner: Any, *, audit_rate: float | None, audit_reject_rate: float | None, reason: str
) -> dict[str, Any]:
    """Check a task's audit rates against the floor (``AUDIT_RATE``, ``AUDIT_REJECT_RATE``):
    the fields recording an operator's exception, {} when there is none. Raises
    InvalidInput naming the field: out of 0..1, below the floor for anyone but an
    operator, or an operator's exception without a reason."""
    below = []
    for name, rate, floor in (
        ("audit_rate", audit_rate, settings.AUDIT_RATE),
        ("audit_reject_rate", audit_reject_rate, settings.AUDIT_REJECT_RATE),
    ):
        if rate is None:
            continue
        if not 0 <= rate <= 1:
            raise InvalidInput(f"{name} must be between 0 and 1")
        if rate < floor:
            below.append((name, rate, floor))
    if not below:
        return {}
    name, rate, floor = below[0]
    if not is_operator(owner):
        raise InvalidInput(
            f"{name}: {rate:g} is below this deployment's floor of {floor:g}; you may raise a "
            "task's audit rate, not lower it (only an operator may, saying why)"
        )
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(
            f"audit_rate_reason: say why {name} is below the floor of {floor:g} (it is recorded)"
        )
    return {
        "audit_rate_set_by": owner,
        "audit_rate_set_at": timezone.now(),
        "audit_rate_reason": reason[:2000],
    }


# A task's second_model that turns the second judge off even when the setting names one.
NO_SECOND_JUDGE = "none"


def second_model_checked(name: str) -> str:
    """A task's second validator model: "" (the setting's), "none" (no second judge) or a
    name the model registry resolves; anything else raises ``ModelConfigurationError``."""
    name = (name or "").strip()
    if not name or name.lower() == NO_SECOND_JUDGE:
        return name.lower()
    resolve_model(name)
    return name


def _title_from(request: str) -> str:
    first_line = request.splitlines()[0]
    return first_line if len(first_line) <= 80 else first_line[:77] + "..."


FEEDBACK_TARGETS = {
    FeedbackAction.SATISFIED: TaskStatus.CLOSED,
    FeedbackAction.REVISE: TaskStatus.NEEDS_REVISION,
    FeedbackAction.ABANDON: TaskStatus.ABANDONED,
}


# The job that applies a pending decision when its undo window closes (issue 26).
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
) -> Feedback:
    """Record a person's decision (S5, issue 26). With an undo window
    (``undo_seconds``, by default ``DECISION_UNDO_SECONDS``) it is ``pending`` and nothing
    follows from it until ``applies_at``, when the ``tasks_app.apply_decision`` job (or
    the sweep) applies it through ``task_transition``; ``decision_undo`` cancels it
    before then. With 0 it applies at once. Returns the feedback row."""
    comment = comment.strip()
    decided = _decision_action(action, comment)
    seconds = settings.DECISION_UNDO_SECONDS if undo_seconds is None else undo_seconds
    # Row lock: a second decision on the same task (a double click, two reviewers) waits
    # here and then finds this one pending, and is refused.
    locked = Task.objects.select_for_update().get(pk=task_id)
    _refuse_decision(locked, actor=actor, action=decided, force=force)
    _refuse_stale(
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
        task_id=feedback.task_id,
        to_status=FEEDBACK_TARGETS[action],
        actor=feedback.author,
        actor_kind="user",
        reason=f"{action.label}: {comment}" if comment else action.label,
        expected_version=expected_version,
        updates=updates,
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
    """Apply a person's decision at once, with no undo window (S5): satisfied → closed,
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
    """Apply a pending decision whose window has closed (issue 26). Idempotent: returns
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
    """Cancel a pending decision inside its window (issue 26), by its author or a reviewer:
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


def _claim_event(
    task: Task,
    *,
    kind: str,
    actor: Any,
    actor_kind: str = "user",
    reason: str = "",
    task_status: str = "",
    at: Any = None,
) -> ClaimEvent:
    """Record the claim on the locked ``task`` changing hands; call before changing it,
    so the row still names the previous holder."""
    return ClaimEvent.objects.create(
        task=task,
        kind=kind,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_kind=actor_kind,
        previous_holder_id=task.claimed_by_id,
        previous_claimed_at=task.claimed_at,
        task_status=task_status or task.status,
        attempt_index=task.attempt_count,
        reason=reason,
        at=at or timezone.now(),
    )


@transaction.atomic
def task_claim(*, task_id: int, reviewer: Any, force: bool = False) -> Task:
    """Claim a task for review (U3). A live claim by someone else is refused unless
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
    _claim_event(
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
    """Give up a claim (U3); someone else's live claim only with ``force``. Writes a
    ``ClaimEvent``; releasing when nobody holds the claim changes nothing."""
    task = Task.objects.select_for_update().get(pk=task_id)
    if task.claimed_by_id not in (None, reviewer.pk) and task.claim_is_live() and not force:
        raise ClaimConflict(f"Task {task_id} is claimed by {task.claimed_by}, not by you.")
    if task.claimed_by_id is None:
        return task
    _claim_event(task, kind=ClaimEventKind.RELEASED, actor=reviewer)
    task.claimed_by = None
    task.claimed_at = None
    task.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
    return task


@transaction.atomic
def task_assign(*, task_id: int, assignee: Any | None, actor: Any) -> Task:
    """Assign a task to a reviewer, or clear the assignment with ``assignee=None``
    (issue 13). Only open tasks can be assigned; the assignment is advice, not a lock."""

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
