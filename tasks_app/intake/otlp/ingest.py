"""Storing OTLP spans as they arrive. Spans of one trace may come in several
requests, in any order; they are written in bulk, whole, and never dropped: a span that
arrives after its trace became an attempt is stored as late and shown on the task page.
When a trace is complete, ``tasks_app.intake.otlp.assembly`` makes it an attempt.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from tasks_app.intake.models import OtlpSpan, OtlpTrace, OtlpTraceState
from tasks_app.intake.otlp.decode import RejectedSpan, SpanRecord, is_primary_key
from tasks_app.intake.otlp.mapping import (
    AGENT,
    FINAL_KEY,
    TASK_ID_KEY,
)
from tasks_app.workflow.models import Task

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
    valid_ids = {key: int(key) for key in named if is_primary_key(key)}
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
