"""A complete OTLP trace made an attempt.

A trace is complete when its root span (the one without a parent) has arrived and no
span of the trace arrived for ``OTLP_TRACE_QUIET_SECONDS``, or at once when the root
carries ``evidentia.final = true``. ``otlp_trace_assemble`` then maps it
(``tasks_app.intake.otlp.mapping``) and submits it through the same service as the attempts API
(``tasks_app.intake.external.external_attempt_submit``), so validation, claims and review work
unchanged. ``otlp_due_traces`` finds the complete traces whose assembly job was lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from project.errors import DomainError
from tasks_app.intake.external import external_attempt_submit
from tasks_app.intake.models import OtlpSpan, OtlpTrace, OtlpTraceState
from tasks_app.intake.otlp.decode import is_primary_key
from tasks_app.intake.otlp.mapping import (
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
        if value not in (None, "") and is_primary_key(str(value)):
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
