"""What evidence_app registers when Django starts (``EvidenceAppConfig.ready``): the
validator tasks_app sends answers to (``tasks_app.workflow.verdicts``), and the validator's
families on /metrics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, Sum
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from evidence_app.models import ValidationSnapshot
from evidence_app.verdicts import StoredVerdicts
from project.metrics import (
    PREFIX,
    MetricSource,
    Tally,
    histogram,
    latency_aggregates,
    register_source,
    usage_families,
)
from tasks_app.workflow.verdicts import register_validator


def _tallies() -> dict[str, Tally]:
    return {
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
                **latency_aggregates("latency_ms"),
            },
        ),
    }


def _families(tallies: dict[str, Tally]) -> Iterable[Metric]:
    yield from _validations(tallies["validations"].refresh())


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
        histogram(latency, [model], values)
    yield verdicts
    yield retries
    yield chunked
    yield latency
    yield from usage_families("validator", by_model)


def register() -> None:
    register_validator(StoredVerdicts())
    register_source(MetricSource("evidence_app", _families, _tallies))
