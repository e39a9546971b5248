"""Agent runs, their transcripts and requests, the tool evidence they gather, and worker
heartbeats."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.db import models
from django.utils import timezone

from tasks_app.workflow.models import Task


class RunKind(models.TextChoices):
    MAIN = "main", "Main"
    TEAM_NODE = "team_node", "Team node"
    SYNTHESIS = "synthesis", "Synthesis"


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


# The finish_reason of a run a dead worker left when a redelivered job took its attempt
# over, or when the reaper re-queued it: the attempt is re-run under the same
# index, so these runs are kept as evidence but left out of its validation packet.
RUN_TAKEN_OVER = "taken_over"

RUN_LEASE_EXPIRED = "lease_expired"

RUN_ABANDONED_BY_DEAD_WORKER = frozenset({RUN_TAKEN_OVER, RUN_LEASE_EXPIRED})


class Run(models.Model):
    """One agent execution within an attempt."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    attempt_index = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.MAIN)
    node_id = models.CharField(max_length=100, blank=True, default="")
    node_role = models.CharField(max_length=200, blank=True, default="")
    # The name an external agent gave this run within its attempt, so streamed
    # events can name the run they belong to; "" for runs of the built-in runtime.
    external_key = models.CharField(max_length=100, blank=True, default="")
    # Position in the team graph; results are ordered by it, not by completion.
    graph_index = models.PositiveIntegerField(default=0)
    session_id = models.UUIDField(default=uuid.uuid4)
    model_name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.RUNNING)
    finish_reason = models.CharField(max_length=64, blank=True, default="")
    output_text = models.TextField(blank=True, default="")
    usage = models.JSONField(default=dict, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Cost in money, priced with genai-prices per request and summed at finish;
    # null means "cost unknown" (a model genai-prices does not know), never zero.
    cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    cost_currency = models.CharField(max_length=3, blank=True, default="", db_default="")
    tool_iterations = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)
    # Source data kept with the run that maps to no column: e.g. the OTLP trace's spans
    # that are neither chat nor tool calls.
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["attempt_index", "graph_index", "id"]
        indexes = [
            models.Index(fields=["task", "attempt_index"], name="run_task_attempt"),
            # Cost per day on the operator overview.
            models.Index(fields=["started_at"], name="run_started"),
        ]

    def __str__(self) -> str:
        node = f" {self.node_id}" if self.node_id else ""
        return f"run {self.pk} (task {self.task_id} attempt {self.attempt_index} {self.kind}{node})"


class RunMessage(models.Model):
    """One message of a run's transcript, in order."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="messages")
    index = models.PositiveIntegerField()
    # system | user | assistant | tool
    role = models.CharField(max_length=16)
    content = models.TextField(blank=True, default="")
    # The pydantic-ai message, serialised, for exact replay.
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="runmessage_run_index_unique")
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} message {self.index} ({self.role})"


class LLMRequestSnapshot(models.Model):
    """Compact record of one model request; the full request only in debug mode."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="request_snapshots")
    iteration = models.PositiveIntegerField()
    provider = models.CharField(max_length=100)
    model_name = models.CharField(max_length=200)
    message_count = models.PositiveIntegerField()
    tool_names = models.JSONField(default=list, blank=True)
    message_chars = models.PositiveIntegerField()
    tool_schema_chars = models.PositiveIntegerField()
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    thinking = models.BooleanField(default=False)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Cost in money, priced with genai-prices when the row was written;
    # null means "cost unknown" (a model genai-prices does not know), never zero.
    cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    cost_currency = models.CharField(max_length=3, blank=True, default="", db_default="")
    full_request = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "iteration", "id"]

    def __str__(self) -> str:
        return f"run {self.run_id} request {self.iteration} ({self.model_name})"


def content_digest(tool_name: str, content: str) -> str:
    """Identity of a tool result for de-duplication: same tool, same content."""
    return hashlib.sha256(f"{tool_name}\x00{content}".encode()).hexdigest()


class ToolEvidenceQuerySet(models.QuerySet["ToolEvidence"]):
    def without_content(self) -> ToolEvidenceQuerySet:
        """List rows without the (possibly multi-megabyte) content column."""
        return self.defer("content", "event_payload")


class ToolEvidence(models.Model):
    """One tool result, written the moment the tool returns."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_evidence")
    # Denormalised so packet building and the UI need one indexed query per attempt.
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="tool_evidence")
    attempt_index = models.PositiveIntegerField()
    # Order of the result within its run.
    sequence = models.PositiveIntegerField()
    tool_name = models.CharField(max_length=100)
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    arguments = models.JSONField(default=dict, blank=True)
    content = models.TextField(blank=True, default="")
    content_chars = models.PositiveIntegerField(default=0)
    content_sha256 = models.CharField(max_length=64, default="")
    is_error = models.BooleanField(default=False)
    url = models.CharField(max_length=2000, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    event_payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ToolEvidenceQuerySet.as_manager()

    class Meta:
        ordering = ["run", "sequence"]
        indexes = [
            # An attempt's results (packets), and the task page's first results in list
            # order read without sorting the others (20,000 in an attempt).
            models.Index(
                fields=["task", "attempt_index", "run", "sequence"], name="evidence_task_list"
            ),
        ]
        constraints = [
            # A redelivered job cannot store the same result twice.
            models.UniqueConstraint(fields=["run", "sequence"], name="evidence_run_sequence_unique")
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} #{self.sequence} (run {self.run_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.set_content_fields()
        super().save(*args, **kwargs)

    def set_content_fields(self) -> None:
        """The size and digest of ``content``: ``save`` sets them, and a caller that
        inserts rows in bulk (``bulk_create`` calls no ``save``) calls this first."""
        for name, value in self.content_fields(self.tool_name, self.content).items():
            setattr(self, name, value)

    @staticmethod
    def content_fields(tool_name: str, content: str) -> dict[str, Any]:
        """The columns computed from a result's content, for a writer without a model
        instance (the recorder inserts column values)."""
        return {
            "content_chars": len(content),
            "content_sha256": content_digest(tool_name, content),
        }


class ServiceHeartbeat(models.Model):
    """Liveness of a background process, written by the process itself.

    A worker writes one row per host name every ``OPS_HEARTBEAT_SECONDS`` with the
    queues it consumes; beat writes its row when it sends a scheduled job; a heartbeat
    job sent by beat to each queue records when a worker took it off that queue.
    ``/ready`` and ``manage.py check_health`` read these rows.
    """

    class Kind(models.TextChoices):
        WORKER = "worker", "Worker"
        BEAT = "beat", "Beat"
        QUEUE = "queue", "Queue round trip"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200)
    queues = models.JSONField(default=list, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "name"], name="heartbeat_kind_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} at {self.seen_at:%Y-%m-%d %H:%M:%S}"
