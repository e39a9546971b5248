"""What evidence_app registers when Django starts (``EvidenceAppConfig.ready``): its jobs
and the queues they go to (``jobs.JOB_ROUTES``), its periodic job (``jobs.PERIODIC_JOBS``),
the validator tasks_app sends answers to (``tasks_app.workflow.verdicts``), the verdict
fields of the tasks API (``tasks_app.api.verdict_fields``), a new task's audit settings
and second judge, checked against the floor and stored beside the task
(``tasks_app.workflow.creation_checks``) and shown by the tasks API
(``tasks_app.workflow.task_settings``), its webhook events (``trust.webhook_events``,
sent through ``tasks_app.notifications``), and the validator's families on /metrics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q, Sum
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from evidence_app.api.task_verdicts import TaskVerdictFields
from evidence_app.jobs import JOB_ROUTES, PERIODIC_JOBS
from evidence_app.models import AutoAcceptThreshold, ValidationSnapshot
from evidence_app.trust.blinding import exposure_receiver
from evidence_app.trust.rates import WINDOW_DAYS, trust_window
from evidence_app.trust.team import audit_queue, decisions_by_role, queue_age
from evidence_app.trust.webhook_events import WEBHOOK_EVENTS
from evidence_app.validation.stored_verdicts import StoredVerdicts
from evidence_app.validation.task_settings import TaskSettingsFields, task_settings_checked
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
from project.queues import register_routes
from tasks_app.actions import (
    register_creation_check,
    register_task_settings,
    register_validator,
    register_verdict_fields,
    register_webhook_events,
)
from tasks_app.records import task_seen


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
        f"{PREFIX}_validation_schema_retries", "Schema retries by model.", labels=["model"]
    )
    chunked = CounterMetricFamily(
        f"{PREFIX}_validations_chunked",
        "Validations judged in evidence parts by model.",
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


# --- The review team ------------------------------------------------------------------------


def _review_team(_: dict[str, Tally]) -> Iterable[Metric]:
    """Read afresh on each scrape: the queue's ages (one indexed subquery per waiting
    task), two grouped counts over the last 24 hours, the open audits."""
    queue = queue_age()
    age = GaugeMetricFamily(
        f"{PREFIX}_review_queue_age_seconds",
        "Age of the tasks waiting for review since they entered it: median, 95th "
        "percentile and oldest (quantile 1); no sample when the queue is empty.",
        labels=["quantile"],
    )
    for quantile, value in (("0.5", queue.p50), ("0.95", queue.p95), ("1", queue.oldest)):
        if value is not None:
            age.add_metric([quantile], value)
    waiting = GaugeMetricFamily(
        f"{PREFIX}_review_queue_tasks", "Tasks waiting for review (needs_review) now."
    )
    waiting.add_metric([], queue.count)
    by_role = decisions_by_role()
    decisions = GaugeMetricFamily(
        f"{PREFIX}_review_decisions_24h",
        "People's decisions in the last 24 hours: tasks moved out of needs_review by a "
        "person, and audits judged.",
    )
    decisions.add_metric([], sum(by_role.values()))
    per_role = GaugeMetricFamily(
        f"{PREFIX}_review_decisions_24h_by_role",
        "The same decisions by the person's role (reviewer, operator, requester, removed).",
        labels=["role"],
    )
    for role, n in by_role.items():
        per_role.add_metric([role], n)
    audits = audit_queue()
    audits_open = GaugeMetricFamily(f"{PREFIX}_audit_queue_open", "Audits waiting for a person.")
    audits_open.add_metric([], audits.count)
    audits_oldest = GaugeMetricFamily(
        f"{PREFIX}_audit_queue_oldest_seconds",
        "Age of the oldest audit waiting for a person (0 when none is open).",
    )
    audits_oldest.add_metric([], audits.oldest or 0.0)
    yield from (age, waiting, decisions, per_role, audits_open, audits_oldest)


def _trust_families(_tallies: dict[str, Tally]) -> Iterable[Metric]:
    """The certified false-accept rate of the last 30 days per template version and model,
    and the audits behind it, read afresh on each scrape (one aggregate query)."""
    window = f"the last {WINDOW_DAYS} days"
    labels = ["template_version", "model"]
    rate = GaugeMetricFamily(
        f"{PREFIX}_false_accept_rate",
        f"Estimated share of auto-accepted answers judged not correct on audits, {window}.",
        labels=labels,
    )
    upper = GaugeMetricFamily(
        f"{PREFIX}_false_accept_rate_upper",
        f"Upper bound of the 95 % interval of the false-accept rate, {window}.",
        labels=labels,
    )
    lower = GaugeMetricFamily(
        f"{PREFIX}_false_accept_rate_lower",
        f"Lower bound of the 95 % interval of the false-accept rate, {window}.",
        labels=labels,
    )
    judged = GaugeMetricFamily(
        f"{PREFIX}_audits_judged_total",
        f"Audits judged by a person on verdicts of {window}, by route.",
        labels=[*labels, "route"],
    )
    outstanding = GaugeMetricFamily(
        f"{PREFIX}_audits_outstanding",
        f"Audits drawn on verdicts of {window} and not judged yet (both routes together: "
        "an open audit's route is not told).",
        labels=labels,
    )
    for group in trust_window():
        names = [group.template_version, group.model_name]
        for figures in (group.window.false_accepts, group.window.false_rejects):
            if figures is None:
                continue
            judged.add_metric([*names, figures.route], figures.judged)
        outstanding.add_metric(names, group.window.outstanding)
        accepts = group.window.false_accepts
        if accepts is None or accepts.interval.high is None:
            continue  # nothing judged: the rate is unknown, not zero
        if accepts.interval.estimate is not None:
            rate.add_metric(names, accepts.interval.estimate)
        upper.add_metric(names, accepts.interval.high)
        lower.add_metric(names, accepts.interval.low or 0.0)
    yield from (rate, upper, lower, judged, outstanding)


def _autoaccept_families(_tallies: dict[str, Tally]) -> Iterable[Metric]:
    """Each judge's approved auto-accept threshold and whether the drift rule stopped it,
    read afresh on each scrape from the stored rows (one small query)."""
    labels = ["template_version", "model"]
    threshold = GaugeMetricFamily(
        f"{PREFIX}_auto_accept_threshold",
        "The approved certified score at or above which a judge's accepted answers go to "
        "the requester without a person.",
        labels=labels,
    )
    stopped = GaugeMetricFamily(
        f"{PREFIX}_auto_accept_stopped",
        "1 when the audits of a judge's auto-accepts showed it drifting and auto-accept "
        "stopped (everything goes to a person), else 0.",
        labels=labels,
    )
    drift = GaugeMetricFamily(
        f"{PREFIX}_auto_accept_drift_statistic",
        "The drift rule's CUSUM on the audits since the threshold was approved (stops at 5).",
        labels=labels,
    )
    for row in AutoAcceptThreshold.objects.approved().filter(threshold__isnull=False):
        names = [row.template_version, row.model_name]
        threshold.add_metric(names, row.threshold or 0.0)
        stopped.add_metric(names, 1.0 if row.stopped else 0.0)
        drift.add_metric(names, row.drift_statistic)
    yield from (threshold, stopped, drift)


def register() -> None:
    register_routes(JOB_ROUTES)
    register_periodic(PERIODIC_JOBS)
    register_validator(StoredVerdicts())
    register_verdict_fields(TaskVerdictFields())
    register_creation_check(task_settings_checked)
    register_task_settings(TaskSettingsFields())
    register_webhook_events(WEBHOOK_EVENTS)
    # A read of a task's status or verdict makes a later judgement of its open audits
    # not blind.
    task_seen.connect(exposure_receiver, dispatch_uid="evidence_app.audit_exposure")
    register_source(MetricSource("evidence_app", _families, _tallies))
    register_source(MetricSource("review_team", _review_team))
    register_source(MetricSource("evidence_app_trust", _trust_families))
    register_source(MetricSource("evidence_app_autoaccept", _autoaccept_families))
