"""What tasks_app connects when Django starts (``TasksAppConfig.ready``): its jobs and the
queues they go to (``jobs.JOB_ROUTES``), its periodic jobs (``jobs.PERIODIC_JOBS``), the
webhook events that follow a status change, and what it registers into the project's
operations infrastructure: its families on /metrics, the worker and beat checks of
/ready, where heartbeats are written, where the responses of idempotent writes are kept
(``project.idempotency``), and the recovery a worker runs when it starts.
``project/`` reads none of this app's tables itself."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from celery import signals
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Count, Q, Sum
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from project import health, heartbeats, idempotency
from project.celery import register_periodic
from project.metrics import (
    PREFIX,
    MetricSource,
    Tally,
    histogram,
    latency_aggregates,
    register_source,
    usage_families,
)
from project.queues import (
    MAINTENANCE,
    consumed_queues,
    queue_name,
    register_routes,
    worker_queues,
)
from tasks_app.api.idempotency import idempotent_call
from tasks_app.intake.signals import trace_unusable
from tasks_app.jobs import JOB_ROUTES, PERIODIC_JOBS
from tasks_app.notifications.models import DeliveryStatus, WebhookDelivery, WebhookDeliveryAttempt
from tasks_app.notifications.webhooks import webhook_events_for_trace, webhook_events_for_transition
from tasks_app.runtime.models import LLMRequestSnapshot, ServiceHeartbeat
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.runtime.runs import heartbeat_forget, heartbeat_record
from tasks_app.workflow.models import Task, TaskEvent
from tasks_app.workflow.outbox import outbox_relay
from tasks_app.workflow.signals import task_transitioned
from tasks_app.workflow.states import TaskStatus

log = logging.getLogger(__name__)

REAPER_REASON = "attempt lease expired"


# --- /metrics ---------------------------------------------------------------------------


def _tallies() -> dict[str, Tally]:
    return {
        "transitions": Tally(TaskEvent, "at", ("from_status", "to_status"), {"n": Count("pk")}),
        "reaper": Tally(
            TaskEvent,
            "at",
            ("to_status",),
            {"n": Count("pk")},
            where=Q(from_status="running", reason__startswith=REAPER_REASON),
        ),
        "agent_requests": Tally(
            LLMRequestSnapshot,
            "created_at",
            ("model_name",),
            {
                "n": Count("pk"),
                "tokens_in": Sum("input_tokens"),
                "tokens_out": Sum("output_tokens"),
                "cost_usd": Sum("cost"),
                "unpriced": Count("pk", filter=Q(cost__isnull=True)),
                **latency_aggregates("latency_ms"),
            },
        ),
    }


def _families(tallies: dict[str, Tally]) -> Iterable[Metric]:
    yield from _gauges()
    yield from _transitions(tallies["transitions"].refresh(), tallies["reaper"].refresh())
    yield from _agent_requests(tallies["agent_requests"].refresh())
    yield from _heartbeats()
    yield from _webhooks()


def _gauges() -> Iterable[Metric]:
    tasks = GaugeMetricFamily(f"{PREFIX}_tasks", "Tasks by status.", labels=["status"])
    counts = dict(Task.objects.values_list("status").annotate(n=Count("pk")).order_by())
    for status in TaskStatus.values:
        tasks.add_metric([status], counts.get(status, 0))
    yield tasks
    fresh = timezone.now() - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    in_flight = GaugeMetricFamily(
        f"{PREFIX}_jobs_in_flight",
        "Attempts running under a live lease, and tasks waiting for or in validation.",
        labels=["job"],
    )
    in_flight.add_metric(
        ["attempt"],
        Task.objects.filter(status=TaskStatus.RUNNING, heartbeat_at__gte=fresh).count(),
    )
    in_flight.add_metric(["validation"], counts.get(TaskStatus.VALIDATING, 0))
    yield in_flight


def _transitions(
    transitions: dict[tuple[Any, ...], dict[str, Any]], reaper: dict
) -> Iterable[Metric]:
    family = CounterMetricFamily(
        f"{PREFIX}_task_transitions",
        "Task status changes by edge (rate() gives transitions per minute).",
        labels=["from_status", "to_status"],
    )
    for (from_status, to_status), values in sorted(transitions.items()):
        family.add_metric([from_status, to_status], values["n"])
    yield family
    actions = CounterMetricFamily(
        f"{PREFIX}_reaper_actions",
        "Attempts recovered after their worker died: requeued (back to open) by the reaper, "
        "taken_over by a redelivered job, or failed.",
        labels=["action"],
    )
    by_target = {key[0]: values["n"] for key, values in reaper.items()}
    actions.add_metric(["requeued"], by_target.get("open", 0))
    actions.add_metric(["taken_over"], by_target.get("running", 0))
    actions.add_metric(["failed"], by_target.get("failed", 0))
    yield actions


def _agent_requests(totals: dict[tuple[Any, ...], dict[str, Any]]) -> Iterable[Metric]:
    latency = HistogramMetricFamily(
        f"{PREFIX}_model_request_latency_seconds",
        "Latency of each agent model request by model.",
        labels=["role", "model"],
    )
    by_model = {key[0]: values for key, values in totals.items()}
    for model, values in sorted(by_model.items()):
        histogram(latency, ["agent", model], values)
    yield latency
    yield from usage_families("agent", by_model)


def _heartbeats() -> Iterable[Metric]:

    now = timezone.now()
    rows = list(ServiceHeartbeat.objects.values_list("kind", "name", "queues", "seen_at"))
    ages = GaugeMetricFamily(
        f"{PREFIX}_heartbeat_age_seconds",
        "Seconds since a worker, beat or queue round trip was last seen.",
        labels=["kind", "name"],
    )
    consumers = GaugeMetricFamily(
        f"{PREFIX}_queue_consumers",
        "Workers consuming each queue seen within OPS_WORKER_MAX_AGE_SECONDS.",
        labels=["queue"],
    )
    live: dict[str, int] = {queue: 0 for queue in worker_queues()}
    for kind, name, queues, seen_at in rows:
        age = (now - seen_at).total_seconds()
        ages.add_metric([kind, name], age)
        if kind == "worker" and age <= settings.OPS_WORKER_MAX_AGE_SECONDS:
            for queue in queues or []:
                if queue in live:
                    live[queue] += 1
    for queue, n in live.items():
        consumers.add_metric([queue], n)
    yield ages
    yield consumers


def webhook_deliveries_by_outcome() -> dict[str, int]:
    """Webhook delivery attempts by outcome (delivered, retry, gave_up): one
    grouped count over the append-only attempt table."""

    rows = (
        WebhookDeliveryAttempt.objects.order_by()
        .values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    return {outcome or "unknown": n for outcome, n in rows}


def webhook_deliveries_by_status() -> dict[str, int]:
    """Webhook deliveries (one event for one endpoint) by current status."""

    counts = {status: 0 for status in DeliveryStatus.values}
    rows = (
        WebhookDelivery.objects.order_by()
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    counts.update(dict(rows))
    return counts


def _webhooks() -> Iterable[Metric]:
    attempts = CounterMetricFamily(
        f"{PREFIX}_webhook_delivery_attempts",
        "Webhook delivery attempts by outcome (delivered, retry, gave_up).",
        labels=["outcome"],
    )
    for outcome, n in sorted(webhook_deliveries_by_outcome().items()):
        attempts.add_metric([outcome], n)
    yield attempts
    deliveries = GaugeMetricFamily(
        f"{PREFIX}_webhook_deliveries",
        "Webhook deliveries by status (pending, delivered, failed).",
        labels=["status"],
    )
    for status, n in sorted(webhook_deliveries_by_status().items()):
        deliveries.add_metric([status], n)
    yield deliveries


# --- /ready -----------------------------------------------------------------------------


def check_workers() -> tuple[bool, str]:
    cutoff = timezone.now() - timedelta(seconds=settings.OPS_WORKER_MAX_AGE_SECONDS)
    rows = ServiceHeartbeat.objects.filter(
        kind=ServiceHeartbeat.Kind.WORKER, seen_at__gte=cutoff
    ).values_list("name", "queues")
    consumers: dict[str, list[str]] = {q: [] for q in worker_queues()}
    for name, queues in rows:
        for queue in queues or []:
            if queue in consumers:
                consumers[queue].append(name)
    missing = [q for q, names in consumers.items() if not names]
    if missing:
        return False, (
            f"no worker consuming {', '.join(missing)} seen in the last "
            f"{settings.OPS_WORKER_MAX_AGE_SECONDS} s"
        )
    return True, "; ".join(f"{q}: {len(n)} worker(s)" for q, n in consumers.items())


def check_beat() -> tuple[bool, str]:
    row = ServiceHeartbeat.objects.filter(kind=ServiceHeartbeat.Kind.BEAT).first()
    if row is None:
        return False, "beat has never run"
    age = (timezone.now() - row.seen_at).total_seconds()
    if age > settings.OPS_BEAT_MAX_AGE_SECONDS:
        return False, f"beat last ran {age:.0f} s ago (limit {settings.OPS_BEAT_MAX_AGE_SECONDS} s)"
    return True, f"beat last ran {age:.0f} s ago"


# --- Worker start -----------------------------------------------------------------------


def recover_at_start(sender: object = None, **_: object) -> None:
    """``worker_ready``: a worker that starts (after an outage or a crashed deployment,
    say) recovers at once instead of after a beat interval, in a thread so the
    worker is ready meanwhile: every worker publishes the jobs recorded in the outbox
    while the broker was down; a worker that consumes ``maintenance`` then runs one
    reaper sweep, which recovers attempts whose lease expired and re-sends lost attempt
    and validation jobs. The sweep is the periodic one: a lease still valid is left
    alone."""
    sweep = queue_name(MAINTENANCE) in consumed_queues(sender) if sender else False
    threading.Thread(
        target=_recover, args=(sweep,), name="evidentia-recover-at-start", daemon=True
    ).start()


def _recover(sweep: bool) -> None:
    try:
        close_old_connections()
        outbox_relay()
    except Exception as exc:  # the database is down: the periodic relay retries
        log.warning("outbox relay at worker start failed: %s", exc)
    try:
        if sweep:
            close_old_connections()
            report = attempt_reap()
            log.info(
                "reaper sweep at worker start: %d re-queued, %d failed, %d attempt jobs "
                "and %d validation jobs re-sent",
                len(report.requeued),
                len(report.failed),
                len(report.reenqueued),
                len(report.revalidated),
            )
    except Exception as exc:  # the periodic reaper retries
        log.warning("reaper sweep at worker start failed: %s", exc)
    finally:
        connection.close()


def _webhook_events(
    sender: object,
    *,
    task: Task,
    from_status: str,
    to_status: str,
    actor_kind: str,
    reason: str,
    **_: object,
) -> None:
    webhook_events_for_transition(
        task=task,
        from_status=from_status,
        to_status=to_status,
        actor_kind=actor_kind,
        reason=reason,
    )


def register() -> None:
    register_routes(JOB_ROUTES)
    register_periodic(PERIODIC_JOBS)
    task_transitioned.connect(_webhook_events, dispatch_uid="evidentia-webhook-events")
    trace_unusable.connect(webhook_events_for_trace, dispatch_uid="evidentia-trace-webhooks")
    register_source(MetricSource("tasks_app", _families, _tallies))
    health.register_check("workers", check_workers)
    health.register_check("beat", check_beat, when=lambda: settings.OPS_REQUIRE_BEAT)
    heartbeats.register_store(record=heartbeat_record, forget=heartbeat_forget)
    idempotency.register_store(idempotent_call)
    signals.worker_ready.connect(recover_at_start, dispatch_uid="evidentia-recover-at-start")
