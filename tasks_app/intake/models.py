"""OpenTelemetry traces and spans sent by external agents, before assembly."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from tasks_app.workflow.models import Task


class OtlpTraceState(models.TextChoices):
    COLLECTING = "collecting", "Collecting spans"
    SUBMITTED = "submitted", "Submitted as an attempt"
    UNUSABLE = "unusable", "Could not become an attempt"


class OtlpTrace(models.Model):
    """One OpenTelemetry trace sent to the OTLP endpoint: its spans are stored
    as they arrive, and the trace becomes one external attempt when it is complete."""

    # Unique per owner, not globally: a trace id is the exporter's to choose, so another
    # account sending it first must not take it.
    trace_id = models.CharField(max_length=32)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="otlp_traces"
    )
    task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="otlp_traces"
    )
    attempt_index = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(
        max_length=16, choices=OtlpTraceState.choices, default=OtlpTraceState.COLLECTING
    )
    # Set when the root agent span has arrived with an end time; `final` when it carries
    # evidentia.final = true (validate at once, no quiet period).
    root_span_id = models.CharField(max_length=16, blank=True, default="")
    root_ended = models.BooleanField(default=False)
    final = models.BooleanField(default=False)
    span_count = models.PositiveIntegerField(default=0)
    late_span_count = models.PositiveIntegerField(default=0)
    first_span_at = models.DateTimeField(default=timezone.now)
    last_span_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    # Assemblies that failed with an error (not "unusable"): the trace is tried again
    # after retry_at, and marked unusable after OTLP_TRACE_ASSEMBLY_ATTEMPTS.
    assembly_failures = models.PositiveSmallIntegerField(default=0)
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state", "last_span_at"], name="otlptrace_state_last")]
        constraints = [
            models.UniqueConstraint(fields=["owner", "trace_id"], name="otlptrace_owner_trace_id")
        ]

    def __str__(self) -> str:
        return f"trace {self.trace_id} ({self.state})"


class OtlpSpan(models.Model):
    """A span as received, whole; spans that arrive after their trace was submitted are
    kept and marked late, never dropped."""

    trace = models.ForeignKey(OtlpTrace, on_delete=models.CASCADE, related_name="spans")
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = models.CharField(max_length=500)
    operation = models.CharField(max_length=64, blank=True, default="")
    start_ns = models.BigIntegerField()
    end_ns = models.BigIntegerField()
    attributes = models.JSONField(default=dict)
    events = models.JSONField(default=list)
    resource = models.JSONField(default=dict)
    scope = models.CharField(max_length=200, blank=True, default="")
    status_code = models.PositiveSmallIntegerField(default=0)
    status_message = models.TextField(blank=True, default="")
    dropped = models.JSONField(default=dict)
    late = models.BooleanField(default=False)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace", "span_id"], name="otlpspan_trace_span")
        ]

    def __str__(self) -> str:
        return f"span {self.span_id} of {self.trace_id}"
