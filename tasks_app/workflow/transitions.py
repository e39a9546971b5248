"""The one place that assigns ``Task.status``: ``task_transition`` takes a
``Transition`` (the task, where it goes, who asks and why, what the caller saw, the fields
written with it), locks the row, checks the one transition table, applies the change
and writes a ``TaskEvent``, all in one transaction. On PostgreSQL a change that needs
nothing of the row but its expected state (the claim, the answer, the verdict) is one
statement: the lock, the update and the event in one ``WITH``; any other, or a row not
as expected, is locked and read first. It also owns the fields that follow
from the status: the version, the attempt number and lease (written on
entering ``running``, cleared on leaving it) and the review claim (cleared when the task
leaves review); a transition's ``updates`` may not touch them."""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from project.errors import (
    IllegalTransition,
    StaleAction,
)
from tasks_app.workflow import states
from tasks_app.workflow.models import (
    ClaimEvent,
    ClaimEventKind,
    Task,
    TaskEvent,
)
from tasks_app.workflow.signals import task_transitioned
from tasks_app.workflow.states import TaskStatus

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


@dataclass(frozen=True)
class AttemptStarted:
    """The reason written when a task's attempt starts: ``attempt 3 started``, or
    ``attempt 2 re-run 1 started`` for an attempt re-run after its worker died, then
    ``suffix``. The number is the row's after the change, which only the update knows."""

    suffix: str = ""

    def text(self, moved: Task, *, rerun: bool) -> str:
        again = f" re-run {moved.requeue_count}" if rerun else ""
        return f"attempt {moved.attempt_count}{again} started{self.suffix}"


@dataclass(frozen=True)
class Transition:
    """One status change asked of ``task_transition``.

    ``expected_from``/``expected_version``/``expected_attempt`` refuse a change based on
    a stale view (StaleAction); ``lease_token`` fences a worker whose lease was taken
    over; ``expected_agent`` refuses a task run by another agent (StaleAction).
    ``reason`` and ``updates`` may be functions of the locked row (such a change
    locks the row first: one statement more); ``updates``
    naming a field this module owns (``TRANSITION_OWNED_FIELDS``) raises ValueError and
    nothing is written. ``rerun`` marks the reaper's ``running`` -> ``open`` of an
    attempt whose worker died: an infrastructure re-run, not a new attempt.
    """

    task_id: int
    to_status: str
    actor: Any = None
    actor_kind: str = "system"
    reason: str | Callable[[Task], str] | AttemptStarted = ""
    expected_from: str | set[str] | frozenset[str] | None = None
    expected_version: int | None = None
    expected_attempt: int | None = None
    lease_token: str | None = None
    expected_agent: str | None = None
    updates: dict[str, Any] | Callable[[Task], dict[str, Any]] | None = None
    rerun: bool = False


@transaction.atomic
def task_transition(
    change: Transition, *, on_applied: Callable[[Task], object] | None = None
) -> Task:
    """Move a task to ``change.to_status`` atomically and record a ``TaskEvent``.

    An edge missing from the transition table raises ``IllegalTransition``. Entering
    ``running`` starts the next attempt: ``attempt_count + 1`` and a new lease (read it
    from the returned task); ``running`` -> ``running`` (a takeover) keeps the attempt and
    writes a new lease, and so does the claim after a ``rerun``; any other status
    releases the lease. Leaving review ends a claim (with a ``ClaimEvent``).
    ``on_applied`` writes what must commit with the change (a verdict), in the same
    transaction, so hot paths need no outer transaction and no savepoint; it runs before
    the change is announced (``task_transitioned``), whose subscribers may read it.
    """
    if isinstance(change.updates, dict):
        _refuse_owned(change.updates)
    moved = _move_in_one_statement(change)
    if moved is not None:
        task, from_status, reason = moved
    else:
        task, from_status, reason = _lock_and_move(change)
    if on_applied is not None:
        on_applied(task)
    _announce(task, change, from_status=from_status, reason=reason)
    return task


def _lock_and_move(change: Transition) -> tuple[Task, str, str]:
    """Lock the row, check the change against it and apply it: (task, from, reason)."""
    # Row lock: two concurrent actions (two reviewers, a reviewer and a worker) are
    # serialised here, so the second one sees the first one's result and is judged on it.
    task = _lock_task(change.task_id)
    from_status = task.status
    refuse_stale(
        task,
        lease_token=change.lease_token,
        expected_version=change.expected_version,
        expected_attempt=change.expected_attempt,
        expected_from=change.expected_from,
        expected_agent=change.expected_agent,
    )
    if not states.can_transition(from_status, change.to_status):
        raise IllegalTransition(
            task_id=change.task_id, from_status=from_status, to_status=change.to_status
        )
    return task, from_status, _apply(task, change, from_status=from_status)


def _apply(task: Task, change: Transition, *, from_status: str) -> str:
    """Write the new status, the fields that follow from it and the caller's updates,
    with the ``TaskEvent``; returns the event's reason."""
    to_status = change.to_status
    task.status = to_status
    task.version = task.version + 1
    changed = ["status", "version", "updated_at"]
    updates = change.updates(task) if callable(change.updates) else change.updates
    if callable(change.updates):
        _refuse_owned(updates or {})
    reason = change.reason(task) if callable(change.reason) else change.reason
    for field, value in (updates or {}).items():
        setattr(task, field, value)
        changed.append(field)
    if to_status not in states.USER_ACTION_STATUSES:
        changed += _release_review_claim(
            task, from_status=from_status, actor=change.actor, actor_kind=change.actor_kind
        )
    was_interrupted = task.attempt_interrupted
    changed += _move_lease(task, from_status=from_status, rerun=change.rerun)
    if isinstance(reason, AttemptStarted):
        reason = reason.text(task, rerun=was_interrupted)
    if from_status == TaskStatus.VALIDATING and to_status != TaskStatus.VALIDATING:
        # The validation (if any) is over: the next attempt's validation claims afresh.
        task.validation_claimed_at = None
        changed.append("validation_claimed_at")
    actor = change.actor
    _save_with_event(
        task,
        sorted(set(changed)),
        TaskEvent(
            task=task,
            from_status=from_status,
            to_status=to_status,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            actor_kind=change.actor_kind,
            reason=reason,
            attempt_index=task.attempt_count,
        ),
    )
    return reason


def _announce(task: Task, change: Transition, *, from_status: str, reason: str) -> None:
    """What follows the change subscribes to it (webhook events); in this
    transaction and after ``on_applied``, whose verdict a subscriber may read."""
    task_transitioned.send(
        sender=Task,
        task=task,
        from_status=from_status,
        to_status=change.to_status,
        actor_kind=change.actor_kind,
        reason=reason,
    )
    log.info(
        "task %s: %s -> %s",
        change.task_id,
        from_status,
        change.to_status,
        extra={
            "event": "transition",
            "task_id": change.task_id,
            "from_status": from_status,
            "to_status": change.to_status,
            "actor_kind": change.actor_kind,
        },
    )


def refuse_stale(
    task: Task,
    *,
    lease_token: str | None,
    expected_version: int | None,
    expected_attempt: int | None,
    expected_from: str | set[str] | frozenset[str] | None,
    expected_agent: str | None = None,
) -> None:
    """StaleAction when the locked row is not what the caller's change was based on."""
    if expected_agent is not None and task.agent != expected_agent:
        raise StaleAction(f"Task {task.pk} is run by its {task.agent} agent, not {expected_agent}.")
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
        claim_event(
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
    """The attempt's lease after the change; returns the fields changed."""
    if task.status == TaskStatus.RUNNING:
        # The next attempt starts, under a lease of its own: its worker holds the token,
        # refreshes the heartbeat, and every result write is fenced by the token.
        # running -> running is a takeover of the same attempt: a new lease
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
        # Only an attempt re-queued after its worker died is re-run.
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
    built once (the ORM compiled it again on every transition)."""
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
    """``task.save(update_fields=...)`` and ``event.save()``. On PostgreSQL one statement:
    ``WITH moved AS (UPDATE task ... RETURNING id) INSERT INTO taskevent
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


def claim_event(
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


def _one_statement_from(change: Transition) -> list[str] | None:
    """The statuses ``change`` may leave in one statement, or None when it must lock the
    row and read it first: a reason or updates computed from the row, a re-run or a
    takeover (the attempt number and lease depend on the row), or SQLite."""
    if connection.vendor != "postgresql" or change.rerun:
        return None
    if callable(change.reason) or callable(change.updates):
        return None
    if change.updates and (
        "validation_claimed_at" in change.updates
        or any(hasattr(v, "resolve_expression") for v in change.updates.values())
    ):
        return None
    expected = change.expected_from
    if expected is None:
        allowed: set[str] = set(TaskStatus)
    else:
        allowed = {expected} if isinstance(expected, str) else set(expected)
    allowed = {s for s in allowed if states.can_transition(s, change.to_status)}
    if change.to_status == TaskStatus.RUNNING and TaskStatus.RUNNING in allowed:
        return None
    return sorted(allowed) or None


@functools.cache
def _task_columns() -> tuple[list[Any], str]:
    """(the task's concrete fields, the quoted columns ``t."a", t."b", ...``)."""
    quote = connection.ops.quote_name
    fields: list[Any] = list(Task._meta.concrete_fields)
    return fields, ", ".join(f"t.{quote(f.column)}" for f in fields)


def _move_in_one_statement(change: Transition) -> tuple[Task, str, str] | None:
    """On PostgreSQL, the change as one statement: lock the row if it is as the change
    expects (``SELECT ... FOR UPDATE``), update it and insert the ``TaskEvent``, returning
    the row. (task, from status, reason), or None when the change needs the row read
    first or the row is not as expected (gone, moved on, stale, under a review claim or
    a re-run): the caller then locks it and judges the change on what it finds."""
    allowed = _one_statement_from(change)
    if allowed is None:
        return None
    quote = connection.ops.quote_name
    fields, returned = _task_columns()
    now = timezone.now()
    where, params = _expected_row(change, allowed)
    assignments, set_params = _assignments(change, now)
    event_fields, event_values, event_params = _event_values(change, now)
    sql = (
        # FOR UPDATE: a concurrent change of the same row (a second delivery of the
        # claim, a reviewer and the validator) waits here, then finds the row no longer
        # as expected: exactly one of them moves it, as with the lock in _lock_and_move.
        f"WITH old AS (SELECT {quote('id')}, {quote('status')} FROM "
        f"{quote(Task._meta.db_table)} WHERE {where} FOR UPDATE), "
        f"moved AS (UPDATE {quote(Task._meta.db_table)} AS t SET {assignments} FROM old "
        f"WHERE t.{quote('id')} = old.{quote('id')} RETURNING {returned}, "
        f"old.{quote('status')} AS from_status), "
        f"event AS (INSERT INTO {quote(TaskEvent._meta.db_table)} ({event_fields}) "
        f"SELECT {event_values} FROM moved RETURNING {quote('id')}) "
        "SELECT moved.*, event.id FROM moved, event"
    )
    with connection.cursor() as cur:
        cur.execute(sql, params + set_params + event_params)
        row = cur.fetchone()
    if row is None:
        return None
    values = list(row[: len(fields)])
    _, names, converters = _task_loader()
    for i, col, functions in converters:
        for convert in functions:
            values[i] = convert(values[i], col, connection)
    task = Task.from_db(connection.alias, names, values)
    reason = change.reason
    text = reason.text(task, rerun=False) if isinstance(reason, AttemptStarted) else str(reason)
    return task, row[len(fields)], text


def _expected_row(change: Transition, allowed: list[str]) -> tuple[str, list[Any]]:
    """The WHERE of the row the change applies to without reading it first."""
    conditions = ['"id" = %s', '"status" = ANY(%s)']
    params: list[Any] = [change.task_id, allowed]
    if change.lease_token is not None:
        conditions.append('"lease_token" = %s')
        params.append(change.lease_token)
    if change.expected_version is not None:
        conditions.append('"version" = %s')
        params.append(change.expected_version)
    if change.expected_attempt is not None:
        conditions.append('"attempt_count" = %s')
        params.append(change.expected_attempt)
    if change.expected_agent is not None:
        conditions.append('"agent" = %s')
        params.append(change.expected_agent)
    if change.to_status not in states.USER_ACTION_STATUSES:
        # A review claim's release writes a ClaimEvent naming its holder: read it first.
        conditions.append('"claimed_by_id" IS NULL')
    # An interrupted attempt's claim is a re-run (same number) and its reason says so.
    conditions.append('NOT "attempt_interrupted"')
    return " AND ".join(conditions), params


def _assignments(change: Transition, now: Any) -> tuple[str, list[Any]]:
    """The SET of the one-statement change: what ``_apply`` writes, as SQL."""
    meta = Task._meta
    sets = [
        '"status" = %s',
        '"version" = t."version" + 1',
        '"updated_at" = %s',
        '"attempt_interrupted" = false',
    ]
    params: list[Any] = [
        change.to_status,
        meta.get_field("updated_at").get_db_prep_save(now, connection),
    ]
    updates = change.updates if isinstance(change.updates, dict) else {}
    for name, value in updates.items():
        field: Any = meta.get_field(name)
        sets.append(f"{connection.ops.quote_name(field.column)} = %s")
        params.append(field.get_db_prep_save(value, connection))
    if change.to_status not in states.USER_ACTION_STATUSES:
        sets += ['"claimed_by_id" = NULL', '"claimed_at" = NULL']
    if change.to_status == TaskStatus.RUNNING:
        sets += [
            '"attempt_count" = t."attempt_count" + 1',
            '"lease_token" = %s',
            '"heartbeat_at" = %s',
        ]
        params += [
            secrets.token_hex(16),
            meta.get_field("heartbeat_at").get_db_prep_save(now, connection),
        ]
    else:
        sets += ['"lease_token" = %s', '"heartbeat_at" = NULL']
        params.append("")
    if change.to_status != TaskStatus.VALIDATING:
        sets.append(
            '"validation_claimed_at" = CASE WHEN old."status" = %s THEN NULL '
            'ELSE t."validation_claimed_at" END'
        )
        params.append(TaskStatus.VALIDATING.value)
    return ", ".join(sets), params


def _event_values(change: Transition, now: Any) -> tuple[str, str, list[Any]]:
    """(columns, the SELECT list from ``moved``, its parameters) of the change's event."""
    quote = connection.ops.quote_name
    actor = change.actor
    from_moved = {
        "task_id": 'moved."id"',
        "from_status": "moved.from_status",
        "attempt_index": 'moved."attempt_count"',
    }
    given = {
        "to_status": change.to_status,
        "actor_id": actor.pk if getattr(actor, "is_authenticated", False) else None,
        "actor_kind": change.actor_kind,
        "at": now,
    }
    if isinstance(change.reason, AttemptStarted):
        from_moved["reason"] = '%s || moved."attempt_count" || %s'
        reason_params = ["attempt ", f" started{change.reason.suffix}"]
    else:
        given["reason"] = change.reason
        reason_params = []
    fields: list[Any] = [f for f in TaskEvent._meta.concrete_fields if not f.primary_key]
    values: list[str] = []
    params: list[Any] = []
    for f in fields:
        if f.column in from_moved:
            values.append(from_moved[f.column])
            if f.column == "reason":
                params += reason_params
        elif f.column in given:
            values.append(f"%s::{f.db_type(connection)}")
            params.append(f.get_db_prep_save(given[f.column], connection))
        else:
            raise ValueError(f"the one-statement transition writes no {f.column}")
    return ", ".join(quote(f.column) for f in fields), ", ".join(values), params
