"""Prometheus metrics read from the database and the broker at scrape time (issue 18).

Why not in-process counters: Evidentia runs several gunicorn processes and several
Celery workers, possibly on several hosts; a counter incremented in a worker is not
visible to the web process that serves ``/metrics`` (prometheus-client's multiprocess
mode needs one shared directory, i.e. one host). Every figure here is derived from rows
that already exist, so any web process on any host reports the same values.

- Gauges (tasks by status, jobs in flight, queue depth, heartbeat ages) are read afresh
  on each scrape: a grouped count over an indexed column, one broker call per queue.
- Counters and histograms come from append-only tables (``TaskEvent``,
  ``ValidationSnapshot``, ``LLMRequestSnapshot``). Each process keeps running totals and
  a high-water mark (the last id counted); a scrape only aggregates rows above the mark
  that are older than ``METRICS_SETTLE_SECONDS`` (so a transaction committing late is
  not skipped). The first scrape of a process counts the whole table once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Model, Q, Sum
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from project.celery import worker_queues

__all__ = ["render_metrics", "registry"]

PREFIX = "evidentia"
# Latency buckets in seconds (model calls run from milliseconds to minutes).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
REAPER_REASON = "attempt lease expired"


@dataclass
class Tally:
    """Running totals of one append-only table, grouped by label columns."""

    model: type[Model]
    time_field: str
    labels: tuple[str, ...]
    aggregates: dict[str, Any]
    where: Q = field(default_factory=Q)
    last_id: int = 0
    totals: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> dict[tuple[Any, ...], dict[str, Any]]:
        cutoff = timezone.now() - timedelta(seconds=settings.METRICS_SETTLE_SECONDS)
        with self.lock:
            manager = self.model._default_manager
            high = manager.filter(
                **{"pk__gt": self.last_id, f"{self.time_field}__lt": cutoff}
            ).aggregate(high=Max("pk"))["high"]
            if high is None:
                return dict(self.totals)
            rows = (
                manager.filter(pk__gt=self.last_id, pk__lte=high)
                .filter(self.where)
                .values(*self.labels)
                .annotate(**self.aggregates)
                .order_by()
            )
            for row in rows:
                key = tuple(row[label] for label in self.labels)
                bucket = self.totals.setdefault(key, {})
                for name in self.aggregates:
                    bucket[name] = bucket.get(name, 0) + (row[name] or 0)
            self.last_id = high
            return dict(self.totals)


def _latency_aggregates(column: str) -> dict[str, Any]:
    """count, sum and one cumulative count per bucket of a milliseconds column."""
    aggregates: dict[str, Any] = {
        "count": Count("pk", filter=Q(**{f"{column}__isnull": False})),
        "sum_ms": Sum(column),
    }
    for i, bound in enumerate(LATENCY_BUCKETS):
        aggregates[f"le_{i}"] = Count("pk", filter=Q(**{f"{column}__lte": bound * 1000}))
    return aggregates


def _tallies() -> dict[str, Tally]:
    from evidence_app.models import ValidationSnapshot
    from tasks_app.models import LLMRequestSnapshot, TaskEvent

    return {
        "transitions": Tally(TaskEvent, "at", ("from_status", "to_status"), {"n": Count("pk")}),
        "reaper": Tally(
            TaskEvent,
            "at",
            ("to_status",),
            {"n": Count("pk")},
            where=Q(from_status="running", reason__startswith=REAPER_REASON),
        ),
        "validations": Tally(
            ValidationSnapshot,
            "created_at",
            ("kind", "status", "model_name"),
            {
                "n": Count("pk"),
                "retries": Sum("schema_retry_count"),
                "chunked": Count("pk", filter=~Q(chunk_verdicts=[])),
                "tokens_in": Sum("input_tokens"),
                "tokens_out": Sum("output_tokens"),
                "cost_usd": Sum("cost"),
                "unpriced": Count("pk", filter=Q(cost__isnull=True)),
                **_latency_aggregates("latency_ms"),
            },
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
                **_latency_aggregates("latency_ms"),
            },
        ),
    }


class DatabaseCollector:
    """The prometheus-client collector: every family, built on each scrape."""

    def __init__(self) -> None:
        self._tallies: dict[str, Tally] | None = None
        self._lock = threading.Lock()

    def tallies(self) -> dict[str, Tally]:
        with self._lock:
            if self._tallies is None:
                self._tallies = _tallies()
            return self._tallies

    def describe(self) -> list[Metric]:
        return []  # families are dynamic; do not collect at registration time

    def collect(self) -> Iterator[Metric]:
        started = time.monotonic()
        tallies = self.tallies()
        yield from _gauges()
        yield from _transitions(tallies["transitions"].refresh(), tallies["reaper"].refresh())
        yield from _validations(tallies["validations"].refresh())
        yield from _agent_requests(tallies["agent_requests"].refresh())
        yield from _queues()
        yield from _heartbeats()
        yield from _webhooks()
        scrape = GaugeMetricFamily(
            f"{PREFIX}_metrics_scrape_seconds", "Time this process spent building the metrics."
        )
        scrape.add_metric([], time.monotonic() - started)
        yield scrape


def _gauges() -> Iterable[Metric]:
    from tasks_app.models import Task
    from tasks_app.states import TaskStatus

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
        "taken_over by a redelivered job (issue 17), or failed.",
        labels=["action"],
    )
    by_target = {key[0]: values["n"] for key, values in reaper.items()}
    actions.add_metric(["requeued"], by_target.get("open", 0))
    actions.add_metric(["taken_over"], by_target.get("running", 0))
    actions.add_metric(["failed"], by_target.get("failed", 0))
    yield actions


def _histogram(family: HistogramMetricFamily, labels: list[str], values: dict[str, Any]) -> None:
    buckets = [(str(bound), values.get(f"le_{i}", 0)) for i, bound in enumerate(LATENCY_BUCKETS)]
    buckets.append(("+Inf", values.get("count", 0)))
    family.add_metric(labels, buckets, (values.get("sum_ms") or 0) / 1000)


def _validations(totals: dict[tuple[Any, ...], dict[str, Any]]) -> Iterable[Metric]:
    verdicts = CounterMetricFamily(
        f"{PREFIX}_validations",
        "Validator verdicts by kind (validation/replay), status and model.",
        labels=["kind", "status", "model"],
    )
    retries = CounterMetricFamily(
        f"{PREFIX}_validation_schema_retries", "Schema retries (O1) by model.", labels=["model"]
    )
    chunked = CounterMetricFamily(
        f"{PREFIX}_validations_chunked",
        "Validations judged in evidence parts (V11) by model.",
        labels=["model"],
    )
    latency = HistogramMetricFamily(
        f"{PREFIX}_validation_latency_seconds",
        "Model time of a whole validation (all its requests) by model.",
        labels=["model"],
    )
    by_model: dict[str, dict[str, Any]] = {}
    for (kind, status, model), values in sorted(totals.items()):
        verdicts.add_metric([kind, status, model], values["n"])
        merged = by_model.setdefault(model, {})
        for name, value in values.items():
            merged[name] = merged.get(name, 0) + (value or 0)
    for model, values in sorted(by_model.items()):
        retries.add_metric([model], values.get("retries", 0))
        chunked.add_metric([model], values.get("chunked", 0))
        _histogram(latency, [model], values)
    yield verdicts
    yield retries
    yield chunked
    yield latency
    yield from _usage("validator", by_model)


def _agent_requests(totals: dict[tuple[Any, ...], dict[str, Any]]) -> Iterable[Metric]:
    latency = HistogramMetricFamily(
        f"{PREFIX}_model_request_latency_seconds",
        "Latency of each agent model request by model.",
        labels=["role", "model"],
    )
    by_model = {key[0]: values for key, values in totals.items()}
    for model, values in sorted(by_model.items()):
        _histogram(latency, ["agent", model], values)
    yield latency
    yield from _usage("agent", by_model)


def _usage(role: str, by_model: dict[str, dict[str, Any]]) -> Iterable[Metric]:
    tokens = CounterMetricFamily(
        f"{PREFIX}_model_tokens",
        "Tokens by role (agent/validator), model and direction (input/output).",
        labels=["role", "model", "direction"],
    )
    cost = CounterMetricFamily(
        f"{PREFIX}_model_cost_usd",
        "Cost in USD of priced requests (genai-prices, stored at write time).",
        labels=["role", "model"],
    )
    unpriced = CounterMetricFamily(
        f"{PREFIX}_model_unpriced",
        "Agent requests / validations whose cost is unknown (model not in genai-prices).",
        labels=["role", "model"],
    )
    for model, values in sorted(by_model.items()):
        tokens.add_metric([role, model, "input"], values.get("tokens_in", 0))
        tokens.add_metric([role, model, "output"], values.get("tokens_out", 0))
        cost.add_metric([role, model], float(Decimal(values.get("cost_usd") or 0)))
        unpriced.add_metric([role, model], values.get("unpriced", 0))
    # One family per name in the exposition: the two roles are merged in render_metrics.
    yield tokens
    yield cost
    yield unpriced


def queue_depths() -> dict[str, int | None]:
    """Messages waiting in each queue of WORKER_QUEUES (None: the broker did not say)."""
    url = settings.CELERY_BROKER_URL
    depths: dict[str, int | None] = {}
    if url.startswith("filesystem://"):
        # kombu's filesystem transport: one file per message, named after its queue.
        folder = settings.CELERY_BROKER_FOLDER / "queue"
        names = [p.name for p in folder.glob("*.msg")] if folder.is_dir() else []
        for queue in worker_queues():
            depths[queue] = sum(1 for n in names if n.endswith(f".{queue}.msg"))
        return depths
    from kombu import Connection

    timeout = settings.OPS_CHECK_TIMEOUT_SECONDS
    try:
        with Connection(url, connect_timeout=timeout) as conn:
            conn.ensure_connection(max_retries=0, timeout=timeout)
            channel = conn.default_channel
            for queue in worker_queues():
                try:
                    depths[queue] = int(channel.queue_declare(queue, passive=True).message_count)
                except Exception:  # an unknown queue: nothing was ever sent to it
                    depths[queue] = 0
    except Exception:
        return {queue: None for queue in worker_queues()}
    return depths


def _queues() -> Iterable[Metric]:
    depth = GaugeMetricFamily(
        f"{PREFIX}_queue_depth", "Messages waiting per Celery queue.", labels=["queue"]
    )
    up = GaugeMetricFamily(f"{PREFIX}_broker_up", "1 if the broker answered this scrape.")
    depths = queue_depths()
    for queue, value in depths.items():
        if value is not None:
            depth.add_metric([queue], value)
    up.add_metric([], 0 if any(v is None for v in depths.values()) else 1)
    yield depth
    yield up


def _heartbeats() -> Iterable[Metric]:
    from tasks_app.models import ServiceHeartbeat

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
    """Webhook delivery attempts by outcome (delivered, retry, gave_up; issue 14): one
    grouped count over the append-only attempt table."""
    from tasks_app.models import WebhookDeliveryAttempt

    rows = (
        WebhookDeliveryAttempt.objects.order_by()
        .values_list("outcome")
        .annotate(n=Count("id"))
        .values_list("outcome", "n")
    )
    return {outcome or "unknown": n for outcome, n in rows}


def webhook_deliveries_by_status() -> dict[str, int]:
    """Webhook deliveries (one event for one endpoint) by current status."""
    from tasks_app.models import DeliveryStatus, WebhookDelivery

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


class _MergedCollector:
    """Merges families that share a name (the usage families of both roles)."""

    def __init__(self, inner: DatabaseCollector) -> None:
        self.inner = inner

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        order: list[str] = []
        for family in self.inner.collect():
            if family.name in merged:
                merged[family.name].samples.extend(family.samples)
            else:
                merged[family.name] = family
                order.append(family.name)
        for name in order:
            yield merged[name]


registry = CollectorRegistry(auto_describe=False)
collector = DatabaseCollector()
registry.register(_MergedCollector(collector))


def render_metrics() -> bytes:
    """The text exposition of every metric (prometheus-client's format)."""
    return generate_latest(registry)
