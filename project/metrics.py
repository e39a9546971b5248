"""Prometheus metrics read from the database and the broker at scrape time.

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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Model, Q, Sum
from django.utils import timezone
from kombu import Connection
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from project.queues import worker_queues

__all__ = [
    "MetricSource",
    "Tally",
    "histogram",
    "latency_aggregates",
    "register_source",
    "registry",
    "render_metrics",
    "usage_families",
]

PREFIX = "evidentia"
# Latency buckets in seconds (model calls run from milliseconds to minutes).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


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


def latency_aggregates(column: str) -> dict[str, Any]:
    """count, sum and one cumulative count per bucket of a milliseconds column."""
    aggregates: dict[str, Any] = {
        "count": Count("pk", filter=Q(**{f"{column}__isnull": False})),
        "sum_ms": Sum(column),
    }
    for i, bound in enumerate(LATENCY_BUCKETS):
        aggregates[f"le_{i}"] = Count("pk", filter=Q(**{f"{column}__lte": bound * 1000}))
    return aggregates


@dataclass(frozen=True)
class MetricSource:
    """What one app shows on /metrics: ``tallies`` makes its running totals (once per
    process), ``families`` builds its metric families from them on each scrape. The
    apps register theirs in ``AppConfig.ready`` (``register_source``): this module reads
    no app's tables itself."""

    name: str
    families: Callable[[dict[str, Tally]], Iterable[Metric]]
    tallies: Callable[[], dict[str, Tally]] = dict


_sources: dict[str, MetricSource] = {}


def register_source(source: MetricSource) -> None:
    """Add (or replace, by name) a source of metric families; scraped in the order
    registered, after the broker's."""
    _sources[source.name] = source


class DatabaseCollector:
    """The prometheus-client collector: every family, built on each scrape."""

    def __init__(self) -> None:
        self._tallies: dict[str, dict[str, Tally]] = {}
        self._lock = threading.Lock()

    def tallies(self, source: MetricSource) -> dict[str, Tally]:
        with self._lock:
            if source.name not in self._tallies:
                self._tallies[source.name] = source.tallies()
            return self._tallies[source.name]

    def reset(self) -> None:
        """Forget every running total: the next scrape counts each table afresh."""
        with self._lock:
            self._tallies.clear()

    def describe(self) -> list[Metric]:
        return []  # families are dynamic; do not collect at registration time

    def collect(self) -> Iterator[Metric]:
        started = time.monotonic()
        yield from _queues()
        for source in list(_sources.values()):
            yield from source.families(self.tallies(source))
        scrape = GaugeMetricFamily(
            f"{PREFIX}_metrics_scrape_seconds", "Time this process spent building the metrics."
        )
        scrape.add_metric([], time.monotonic() - started)
        yield scrape


def histogram(family: HistogramMetricFamily, labels: list[str], values: dict[str, Any]) -> None:
    buckets = [(str(bound), values.get(f"le_{i}", 0)) for i, bound in enumerate(LATENCY_BUCKETS)]
    buckets.append(("+Inf", values.get("count", 0)))
    family.add_metric(labels, buckets, (values.get("sum_ms") or 0) / 1000)


def usage_families(role: str, by_model: dict[str, dict[str, Any]]) -> Iterable[Metric]:
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
