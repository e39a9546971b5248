"""Storing OTLP spans as they arrive and turning a complete trace into an attempt
(issue 15). Spans of one trace may come in several requests, in any order; they are
written in bulk, whole, and never dropped: a span that arrives after its trace became an
attempt is stored as late and shown on the task page.

A trace is complete when its root span (the one without a parent) has arrived and no
span of the trace arrived for ``OTLP_TRACE_QUIET_SECONDS``, or at once when the root
carries ``evidentia.final = true``. ``otlp_trace_assemble`` then maps it
(``tasks_app.intake.otlp.mapping``) and submits it through the same service as the attempts API
(``tasks_app.intake.external.external_attempt_submit``), so validation, claims and review work
unchanged.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from project.errors import DomainError
from tasks_app.intake.external import external_attempt_submit
from tasks_app.intake.models import OtlpSpan, OtlpTrace, OtlpTraceState
from tasks_app.intake.otlp.decode import RejectedSpan, SpanRecord
from tasks_app.intake.otlp.mapping import (
    AGENT,
    FINAL_KEY,
    TASK_ID_KEY,
    StoredSpan,
    UnusableTrace,
    map_trace,
    other_spans,
)
from tasks_app.intake.signals import trace_unusable
from tasks_app.runtime.models import Run
from tasks_app.workflow.models import Task
from tasks_app.workflow.services import task_create

log = logging.getLogger(__name__)


# The job that turns complete traces into attempts (tasks_app.jobs), sent by name.
OTLP_ASSEMBLE_JOB = "tasks_app.otlp_assemble_traces"


@dataclass
class IngestResult:
    accepted: int = 0
    rejected: list[RejectedSpan] = field(default_factory=list)
    # (trace pk, seconds to wait before assembling) for traces whose root has arrived.
    ready: list[tuple[int, float]] = field(default_factory=list)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


def _task_id_of(record: SpanRecord) -> Any:
    value = record.attributes.get(TASK_ID_KEY)
    return record.resource.get(TASK_ID_KEY) if value is None else value


# A primary key is a 64-bit signed integer: at most 18 digits always fits.
_MAX_KEY_DIGITS = 18


def _is_primary_key(text: str) -> bool:
    """ASCII digits that fit a primary key: ``str.isdigit`` alone accepts "²" and "①",
    which ``int()`` refuses, and other scripts' digits, which it reads."""
    return text.isascii() and text.isdigit() and len(text) <= _MAX_KEY_DIGITS


def _refused_task_ids(user: Any, records: list[SpanRecord]) -> dict[str, str]:
    """Task ids named by ``evidentia.task_id`` that this user cannot attach a trace to,
    with the reason (the spans are rejected, partial success)."""
    named: dict[str, Any] = {}
    for record in records:
        value = _task_id_of(record)
        if value not in (None, ""):
            named[str(value)] = value
    if not named:
        return {}
    valid_ids = {key: int(key) for key in named if _is_primary_key(key)}
    refused = {
        key: f"evidentia.task_id '{key}' is not a task id" for key in named if key not in valid_ids
    }
    tasks = {
        t.pk: t
        for t in Task.objects.visible_to(user)
        .filter(pk__in=valid_ids.values())
        .only("id", "agent", "owner_id")
    }
    for key, pk in valid_ids.items():
        task = tasks.get(pk)
        if task is None:
            refused[key] = f"task {pk} does not exist or is not yours"
        elif task.owner_id != user.pk:
            # Staff see every task, but only the owner answers one (as on the API).
            refused[key] = f"task {pk} is not yours: only its owner submits its attempts"
        elif task.agent != "external":
            refused[key] = f"task {pk} is not an external task (agent '{task.agent}')"
    return refused


def _attachable(
    user: Any, records: list[SpanRecord], rejected: list[RejectedSpan]
) -> list[SpanRecord]:
    """The records this user may attach to the task they name (or that name none); the
    others are appended to ``rejected`` with the reason."""
    refused_tasks = _refused_task_ids(user, records)
    usable: list[SpanRecord] = []
    for record in records:
        reason = refused_tasks.get(str(_task_id_of(record))) if _task_id_of(record) else None
        if reason:
            rejected.append(RejectedSpan(record.trace_id, record.span_id, reason))
        else:
            usable.append(record)
    return usable


class LockedTrace(NamedTuple):
    """The columns of a locked trace that ingestion reads; ``new`` when this request
    created it (no span of it can be stored yet)."""

    pk: int
    state: str
    root_ended: bool
    final: bool
    new: bool


def _locked_traces(user: Any, records: list[SpanRecord], now: datetime) -> dict[str, LockedTrace]:
    """The user's traces of ``records`` by trace id, the new ones created, all locked.
    Trace ids are the user's own namespace: another account's trace with the same id is
    another trace."""
    trace_ids = sorted({r.trace_id for r in records})
    if connection.vendor == "postgresql":
        return _locked_traces_postgresql(user.pk, trace_ids, now)
    OtlpTrace.objects.bulk_create(
        [OtlpTrace(trace_id=t, owner=user, first_span_at=now, last_span_at=now) for t in trace_ids],
        ignore_conflicts=True,
    )
    # SQLite (make run) locks the whole database for the write: no row locks to take, and
    # the span insert checks for stored spans whether the trace is new or not.
    return {
        trace_id: LockedTrace(pk, state, root_ended, final, new=False)
        for trace_id, pk, state, root_ended, final in OtlpTrace.objects.filter(
            owner=user, trace_id__in=trace_ids
        ).values_list("trace_id", "pk", "state", "root_ended", "final")
    }


def _locked_traces_postgresql(
    owner_pk: int, trace_ids: list[str], now: datetime
) -> dict[str, LockedTrace]:
    """Two statements, not one CTE: a trace another request created and committed while
    the INSERT waited on it is invisible to the snapshot of that statement, so the
    SELECT ... FOR UPDATE must be a statement of its own (READ COMMITTED: a new snapshot)."""
    table = OtlpTrace._meta.db_table
    with connection.cursor() as cursor:
        # In trace id order, as before: two requests creating the same new traces wait on
        # each other's index entries in one order.
        cursor.execute(
            f"""
            INSERT INTO {table} (trace_id, owner_id, state, root_span_id, root_ended, final,
                span_count, late_span_count, first_span_at, last_span_at, error,
                assembly_failures)
            SELECT t, %s, %s, '', false, false, 0, 0, %s, %s, '', 0
            FROM unnest(%s::varchar[]) WITH ORDINALITY AS ids(t, n) ORDER BY n
            ON CONFLICT (owner_id, trace_id) DO NOTHING
            RETURNING id
            """,
            [owner_pk, OtlpTraceState.COLLECTING.value, now, now, trace_ids],
        )
        created = {pk for (pk,) in cursor.fetchall()}
        # Row locks in a fixed order: two requests carrying spans of the same trace are
        # serialised here, so the late/complete decision sees the other's spans.
        cursor.execute(
            f"""
            SELECT trace_id, id, state, root_ended, final FROM {table}
            WHERE owner_id = %s AND trace_id = ANY(%s::varchar[])
            ORDER BY id FOR UPDATE
            """,
            [owner_pk, trace_ids],
        )
        return {
            trace_id: LockedTrace(pk, state, root_ended, final, pk in created)
            for trace_id, pk, state, root_ended, final in cursor.fetchall()
        }


def _span_rows(
    records: list[SpanRecord], traces: dict[str, LockedTrace], now: datetime
) -> tuple[list[tuple[Any, ...]], dict[str, list[SpanRecord]]]:
    """The span rows to insert (``SPAN_COLUMNS``) and the records per trace."""
    rows: list[tuple[Any, ...]] = []
    per_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        trace = traces[record.trace_id]
        per_trace.setdefault(record.trace_id, []).append(record)
        rows.append(
            (
                trace.pk,
                record.span_id,
                record.parent_span_id,
                record.name[:500],
                record.operation[:64],
                record.start_ns,
                record.end_ns,
                record.attributes,
                record.events,
                record.resource,
                record.scope[:200],
                record.status_code,
                record.status_message,
                record.dropped,
                trace.state != OtlpTraceState.COLLECTING,
                now,
            )
        )
    return rows, per_trace


def _trace_changes(
    per_trace: dict[str, list[SpanRecord]],
    traces: dict[str, LockedTrace],
    inserted: dict[int, int],
    ready: list[tuple[int, float]],
) -> list[tuple[int, int, str, bool]]:
    """Per trace (pk, spans inserted, root span id, final) for ``_update_traces``; the
    collecting traces whose root has arrived are appended to ``ready`` with their wait."""
    quiet = float(settings.OTLP_TRACE_QUIET_SECONDS)
    changes: list[tuple[int, int, str, bool]] = []
    for trace_id, records_of_trace in per_trace.items():
        trace = traces[trace_id]
        root = next((r for r in records_of_trace if not r.parent_span_id and r.end_ns), None)
        final = any(
            _truthy(r.attributes.get(FINAL_KEY, r.resource.get(FINAL_KEY)))
            for r in records_of_trace
            if not r.parent_span_id or r.operation == AGENT
        )
        changes.append((trace.pk, inserted.get(trace.pk, 0), root.span_id if root else "", final))
        if trace.state == OtlpTraceState.COLLECTING and (root is not None or trace.root_ended):
            ready.append((trace.pk, 0.0 if (final or trace.final) else quiet))
    return changes


@transaction.atomic
def otlp_ingest(
    *, user: Any, records: list[SpanRecord], now: datetime | None = None
) -> IngestResult:
    """Store the spans of one export request in bulk; return what was rejected and which
    traces now have their root span (to be assembled after the quiet period)."""
    now = now or timezone.now()
    result = IngestResult()
    usable = _attachable(user, records, result.rejected)
    if not usable:
        return result
    traces = _locked_traces(user, usable, now)
    rows, per_trace = _span_rows(usable, traces, now)
    inserted = _insert_spans(rows, new_traces={t.pk for t in traces.values() if t.new})
    result.accepted = sum(inserted.values())
    _update_traces(_trace_changes(per_trace, traces, inserted, result.ready), now)
    return result


SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "operation",
    "start_ns",
    "end_ns",
    "attributes",
    "events",
    "resource",
    "scope",
    "status_code",
    "status_message",
    "dropped",
    "late",
    "received_at",
)


def _insert_spans(rows: list[tuple[Any, ...]], *, new_traces: set[int]) -> dict[int, int]:
    """Insert span rows, a span already stored (an exporter's retry) skipped; return how
    many were inserted per trace. On PostgreSQL the spans of ``new_traces`` (created by
    this transaction, so none of their spans is stored) go to the table by one COPY; the
    others by one COPY into a temporary table and one INSERT ... ON CONFLICT DO NOTHING:
    the bulk path the ingestion benchmark measures."""
    if not rows:
        return {}
    if connection.vendor != "postgresql":
        return _insert_spans_sqlite(rows)
    # A span sent twice in one request is stored once (the first), as ON CONFLICT would.
    unique = {(row[0], row[1]): row for row in reversed(rows)}
    fresh = [row for key, row in unique.items() if key[0] in new_traces]
    known = [row for key, row in unique.items() if key[0] not in new_traces]
    counts = Counter(row[0] for row in fresh)
    table = OtlpSpan._meta.db_table
    columns = ", ".join(SPAN_COLUMNS)
    with connection.cursor() as cursor:
        if fresh:
            _copy_rows(cursor, f"COPY {table} ({columns}) FROM STDIN", fresh)
        if known:
            # Only the columns COPY fills: no id, so no sequence default to clash with.
            cursor.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS otlp_span_in ON COMMIT DELETE ROWS "
                f"AS SELECT {columns} FROM {table} WITH NO DATA"
            )
            _copy_rows(cursor, f"COPY otlp_span_in ({columns}) FROM STDIN", known)
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM otlp_span_in "
                "ON CONFLICT (trace_id, span_id) DO NOTHING RETURNING trace_id"
            )
            counts.update(trace_pk for (trace_pk,) in cursor.fetchall())
            cursor.execute("TRUNCATE otlp_span_in")
    return dict(counts)


# Compact JSON, non-ASCII kept as is: jsonb stores the same value, and the text is shorter.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _copy_rows(cursor: Any, statement: str, rows: list[tuple[Any, ...]]) -> None:
    """COPY ``rows`` (``SPAN_COLUMNS``), the JSON columns serialised once per distinct
    value: the spans of one resource share its attributes, and most have no events."""
    seen: dict[int, str] = {}

    def dumps(value: Any) -> str:
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        key = id(value)
        text = seen.get(key)
        if text is None:
            text = seen[key] = _dumps(value)
        return text

    with cursor.copy(statement) as copy:
        for row in rows:
            # attributes (7), events (8), resource (9) and dropped (13) are JSON.
            copy.write_row(
                (
                    *row[:7],
                    _dumps(row[7]),
                    dumps(row[8]),
                    dumps(row[9]),
                    *row[10:13],
                    dumps(row[13]),
                    *row[14:],
                )
            )


def _insert_spans_sqlite(rows: list[tuple[Any, ...]]) -> dict[int, int]:
    """SQLite (make run): skip the spans already stored, then one bulk insert."""
    wanted = {(row[0], row[1]) for row in rows}
    existing = set(
        OtlpSpan.objects.filter(
            trace_id__in={pk for pk, _ in wanted}, span_id__in={sid for _, sid in wanted}
        ).values_list("trace_id", "span_id")
    )
    fresh: dict[tuple[int, str], tuple[Any, ...]] = {}
    for row in rows:
        if (row[0], row[1]) not in existing:
            fresh.setdefault((row[0], row[1]), row)  # a span sent twice: the first kept
    OtlpSpan.objects.bulk_create(
        [OtlpSpan(**dict(zip(SPAN_COLUMNS, row, strict=True))) for row in fresh.values()],
        batch_size=500,
    )
    return dict(Counter(pk for pk, _ in fresh))


def _update_traces(changes: list[tuple[int, int, str, bool]], now: datetime) -> None:
    """One UPDATE for every trace of the request: span counts (late ones apart), last
    span time, root and final flags."""
    if not changes:
        return
    collecting = OtlpTraceState.COLLECTING.value
    if connection.vendor != "postgresql":
        # SQLite (make run) has no UPDATE ... FROM (VALUES ...) AS v(columns).
        for pk, n, root, final in changes:
            counted = (
                "span_count"
                if OtlpTrace.objects.filter(pk=pk, state=collecting).exists()
                else "late_span_count"
            )
            fields: dict[str, Any] = {"last_span_at": now, counted: F(counted) + n}
            if root:
                fields.update(root_ended=True, root_span_id=root)
            if final:
                fields["final"] = True
            OtlpTrace.objects.filter(pk=pk).update(**fields)
        return
    table = OtlpTrace._meta.db_table
    values = ", ".join(["(%s, %s, %s, %s)"] * len(changes))
    params: list[Any] = [value for change in changes for value in change]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table} SET
                last_span_at = %s,
                span_count = {table}.span_count
                    + CASE WHEN {table}.state = %s THEN v.n ELSE 0 END,
                late_span_count = {table}.late_span_count
                    + CASE WHEN {table}.state = %s THEN 0 ELSE v.n END,
                root_ended = {table}.root_ended OR v.root <> '',
                root_span_id = CASE WHEN v.root <> '' THEN v.root ELSE {table}.root_span_id END,
                final = {table}.final OR v.final
            FROM (VALUES {values}) AS v(pk, n, root, final)
            WHERE {table}.id = v.pk
            """,
            [now, collecting, collecting, *params],
        )


def _stored(span: OtlpSpan) -> StoredSpan:
    return StoredSpan(
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        attributes=span.attributes,
        events=span.events,
        resource=span.resource,
        status_code=span.status_code,
        status_message=span.status_message,
        dropped=span.dropped,
    )


def _task_for(trace: OtlpTrace, task_id: int | None, mapped: Any) -> Task:

    if task_id is not None:
        return Task.objects.get(pk=task_id)
    policy = (
        mapped.validation_policy
        if mapped.validation_policy
        in (
            "always",
            "never",
            "keywords",
        )
        else None
    )
    request = mapped.request.strip() or f"(trace {trace.trace_id} carried no user message)"
    return task_create(
        owner=trace.owner,
        request=request,
        title="",
        rules=mapped.rules or "",
        agent="external",
        **({"validation_policy": policy} if policy else {}),
    )


@dataclass
class AssembleOutcome:
    outcome: str  # "submitted" | "wait" | "retry" | "done" | "unusable"
    wait_seconds: float = 0.0
    task_id: int | None = None
    detail: str = ""


def otlp_trace_assemble(*, trace_pk: int, now: datetime | None = None) -> AssembleOutcome:
    """Submit a complete trace as an attempt, or say how long to wait. Idempotent: a
    trace is submitted once; a second call answers "done".

    Whatever the trace holds, this returns: an assembly that fails with an error is
    counted ("retry" after ``OTLP_TRACE_RETRY_SECONDS``), and after
    ``OTLP_TRACE_ASSEMBLY_ATTEMPTS`` failures the trace is marked unusable with the
    reason, so one account's poisoned trace never stops the jobs and the sweep that
    assemble everyone's. Only a lost database is raised (no trace is to blame)."""
    now = now or timezone.now()
    try:
        return _assemble(trace_pk, now)
    except (OperationalError, InterfaceError):
        raise
    except Exception as exc:  # noqa: BLE001 - the reason is kept on the trace and logged
        log.warning("trace pk %s: assembly failed", trace_pk, exc_info=True)
        return _assembly_failed(trace_pk, f"{type(exc).__name__}: {exc}", now)


def _assembly_failed(trace_pk: int, reason: str, now: datetime) -> AssembleOutcome:
    """Count a failed assembly: try again later, or give up after the last attempt."""
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")[:1000]
    attempts = int(settings.OTLP_TRACE_ASSEMBLY_ATTEMPTS)
    retry = float(settings.OTLP_TRACE_RETRY_SECONDS)
    with transaction.atomic():
        trace = (
            OtlpTrace.objects.select_for_update()
            .filter(pk=trace_pk, state=OtlpTraceState.COLLECTING)
            .first()
        )
        if trace is None:
            return AssembleOutcome("done")
        failures = trace.assembly_failures + 1
        if failures >= attempts:
            OtlpTrace.objects.filter(pk=trace.pk).update(assembly_failures=failures, retry_at=None)
            return _unusable(trace, f"assembly failed {failures} time(s); last error: {reason}")
        OtlpTrace.objects.filter(pk=trace.pk).update(
            assembly_failures=failures,
            retry_at=now + timedelta(seconds=retry),
            error=f"assembly failed (try {failures} of {attempts}, tried again in "
            f"{retry:g} s): {reason}",
        )
    return AssembleOutcome("retry", wait_seconds=retry, detail=reason)


def _assemble(trace_pk: int, now: datetime) -> AssembleOutcome:
    quiet = float(settings.OTLP_TRACE_QUIET_SECONDS)
    max_wait = float(settings.OTLP_TRACE_MAX_WAIT_SECONDS)
    with transaction.atomic():
        trace = OtlpTrace.objects.select_for_update().filter(pk=trace_pk).first()
        if trace is None or trace.state != OtlpTraceState.COLLECTING:
            return AssembleOutcome("done")
        if trace.retry_at is not None and trace.retry_at > now:
            return AssembleOutcome("wait", wait_seconds=(trace.retry_at - now).total_seconds())
        idle = (now - trace.last_span_at).total_seconds()
        age = (now - trace.first_span_at).total_seconds()
        if not trace.final and age < max_wait:
            if not trace.root_ended:
                return AssembleOutcome("wait", wait_seconds=max_wait - age)
            if idle < quiet:
                return AssembleOutcome("wait", wait_seconds=quiet - idle)
        spans = [_stored(s) for s in trace.spans.filter(late=False).order_by("start_ns", "id")]
        try:
            mapped = map_trace(spans, value_length_limit=settings.OTLP_SOURCE_VALUE_LENGTH_LIMIT)
        except UnusableTrace as exc:
            return _unusable(trace, str(exc))
        try:
            with transaction.atomic():
                task = _task_for(trace, mapped.task_id, mapped)
                # The trace's owner sent it: refused (unusable) unless they own the task.
                submitted = external_attempt_submit(
                    task_id=task.pk, attempt=mapped.attempt, actor=trace.owner
                )
                attempt_index = int(submitted.get("attempt_index") or task.attempt_count or 1)
                extra = other_spans(spans)
                Run.objects.filter(
                    task=task, attempt_index=attempt_index, external_key="main"
                ).update(
                    payload={
                        "otlp": {
                            "trace_id": trace.trace_id,
                            "spans": len(spans),
                            "other_spans": extra,
                            "truncated_at_source": mapped.truncated,
                        }
                    }
                )
        except DomainError as exc:
            return _unusable(trace, exc.message)
        OtlpTrace.objects.filter(pk=trace.pk).update(
            state=OtlpTraceState.SUBMITTED,
            task=task,
            attempt_index=attempt_index,
            submitted_at=now,
        )
    log.info(
        "trace %s: submitted as attempt %s of task %s (%d spans)",
        trace.trace_id,
        attempt_index,
        task.pk,
        len(spans),
    )
    return AssembleOutcome("submitted", task_id=task.pk)


def _named_task(trace: OtlpTrace) -> Task | None:
    """The task of its owner one of the trace's spans names (``evidentia.task_id``), if
    any: an unusable trace is shown on that task's page."""
    for attributes, resource in trace.spans.filter(late=False).values_list(
        "attributes", "resource"
    ):
        value = attributes.get(TASK_ID_KEY, resource.get(TASK_ID_KEY))
        if value not in (None, "") and _is_primary_key(str(value)):
            return Task.objects.filter(pk=int(str(value)), owner_id=trace.owner_id).first()
    return None


def _unusable(trace: OtlpTrace, why: str) -> AssembleOutcome:
    """Mark the trace unusable with the reason, on its named task's page if it names one,
    and tell its owner (``trace_unusable``: the ``trace.unusable`` webhook)."""
    why = why[:2000]
    with transaction.atomic():
        trace.task = trace.task or _named_task(trace)
        trace.state = OtlpTraceState.UNUSABLE
        trace.error = why
        OtlpTrace.objects.filter(pk=trace.pk).update(
            state=OtlpTraceState.UNUSABLE, error=why, task=trace.task
        )
        trace_unusable.send(sender=OtlpTrace, trace=trace, reason=why)
    log.warning("trace %s: not submitted: %s", trace.trace_id, why)
    return AssembleOutcome("unusable", detail=why)


def otlp_due_traces(
    *, now: datetime | None = None, limit: int = 200, per_account: int = 20
) -> list[int]:
    """Collecting traces that are complete by now, or waited longer than the maximum:
    the maintenance sweep assembles them when their job was lost. Fair across accounts:
    each account's oldest due trace first, then each one's second, and so on, at most
    ``per_account`` each, so a flood of one account's traces (or its traces that wait
    for a retry) cannot push another's out of the batch."""
    now = now or timezone.now()
    quiet = timedelta(seconds=float(settings.OTLP_TRACE_QUIET_SECONDS))
    max_wait = timedelta(seconds=float(settings.OTLP_TRACE_MAX_WAIT_SECONDS))

    due = (
        OtlpTrace.objects.filter(state=OtlpTraceState.COLLECTING)
        .filter(
            Q(final=True)
            | Q(root_ended=True, last_span_at__lte=now - quiet)
            | Q(first_span_at__lte=now - max_wait)
        )
        .filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now))
        .annotate(
            turn=Window(RowNumber(), partition_by=F("owner_id"), order_by=F("last_span_at").asc())
        )
        .filter(turn__lte=per_account)
        .order_by("turn", "last_span_at", "pk")
    )
    return list(due.values_list("pk", flat=True)[:limit])
