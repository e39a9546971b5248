"""Validation snapshots, replay requests and validation failures (V7, V9); the tool
evidence they judge is stored by tasks_app (``tasks_app.models.ToolEvidence``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from tasks_app.models import Task

__all__ = [
    "ValidationSnapshot",
    "ValidationStatus",
    "FailureCategory",
    "ReplayRequest",
    "ReplayState",
    "ValidationFailure",
]


class ValidationStatus(models.TextChoices):
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence", "Insufficient evidence"
    VALIDATOR_ERROR = "validator_error", "Validator error"


class FailureCategory(models.TextChoices):
    GOAL_MISSED = "goal_missed", "Goal missed"
    INCOMPLETE = "incomplete", "Incomplete"
    RULE_VIOLATION = "rule_violation", "Rule violation"
    TONE_MISMATCH = "tone_mismatch", "Tone mismatch"
    REFUSAL = "refusal", "Refusal"
    UNSUPPORTED_CLAIM = "unsupported_claim", "Unsupported claim"


class SnapshotKind(models.TextChoices):
    VALIDATION = "validation", "Validation"
    REPLAY = "replay", "Replay"


class ValidationSnapshotQuerySet(models.QuerySet["ValidationSnapshot"]):
    def without_bodies(self) -> ValidationSnapshotQuerySet:
        return self.defer("rendered_input", "system_prompt", "raw_responses")

    def originals(self) -> ValidationSnapshotQuerySet:
        return self.filter(kind=SnapshotKind.VALIDATION)


class ValidationSnapshot(models.Model):
    """Everything needed to understand one validator decision (V7)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="validations")
    attempt_index = models.PositiveIntegerField()
    kind = models.CharField(
        max_length=16, choices=SnapshotKind.choices, default=SnapshotKind.VALIDATION
    )
    replay_of = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="replays"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    status = models.CharField(max_length=32, choices=ValidationStatus.choices)
    score = models.FloatField(null=True, blank=True)
    # V1 makes "no category" null, distinct from any category; the API returns null.
    failure_category = models.CharField(  # noqa: DJ001
        max_length=32, choices=FailureCategory.choices, null=True, blank=True
    )
    # The full ValidationResult as JSON (issues, gaps, reasoning, ...).
    result = models.JSONField(default=dict, blank=True)
    evidence_run_ids = models.JSONField(default=list, blank=True)
    session_ids = models.JSONField(default=list, blank=True)
    tool_result_count = models.PositiveIntegerField(default=0)
    evidence_chars = models.PositiveIntegerField(default=0)
    raw_responses = models.JSONField(default=list, blank=True)
    system_prompt = models.TextField(blank=True, default="")
    rendered_input = models.TextField(blank=True, default="")
    rendered_input_chars = models.PositiveIntegerField(default=0)
    prompt_stored = models.BooleanField(default=True)
    template_name = models.CharField(max_length=100, default="")
    template_version = models.CharField(max_length=100, default="")
    model_name = models.CharField(max_length=200, default="")
    latency_ms = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    request_count = models.PositiveIntegerField(default=0)
    # Cost in money of every request (schema retries and chunks included), each priced
    # with genai-prices when it was made; null means "cost unknown", never zero (issue 18).
    cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    cost_currency = models.CharField(max_length=3, blank=True, default="", db_default="")
    schema_retry_count = models.PositiveIntegerField(default=0)
    # O4 failure events: stage, path, message, attempt, cumulative retries.
    schema_errors = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    # V11: per-chunk verdicts when the input exceeded the model's context budget.
    chunk_verdicts = models.JSONField(default=list, blank=True)
    # Issue 12: the model's own status before reconciliation ("" on snapshots made
    # before claims existed; ``status`` is the reconciled one every reader uses) and
    # the claim counts list pages show without reading ``result``.
    model_status = models.CharField(
        max_length=32, choices=ValidationStatus.choices, blank=True, default=""
    )
    claim_summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ValidationSnapshotQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "attempt_index"], name="validation_task_attempt"),
            models.Index(fields=["status", "created_at"], name="validation_status_created"),
            # Cost per day on the operator overview (issue 18).
            models.Index(fields=["created_at"], name="validation_created"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.pk} task {self.task_id} attempt {self.attempt_index}: {self.status}"
        )

    @property
    def passed(self) -> bool:
        """Derived from status, never stored on its own (V1)."""
        return self.status == ValidationStatus.ACCEPTED


class ReplayState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Done"
    FAILED = "failed", "Failed"


class ReplayRequest(models.Model):
    """An operator's request to replay one validation (V9): what was asked and where it
    stands, so a replay that failed says so, with its reason, where it said "queued"."""

    original = models.ForeignKey(
        ValidationSnapshot, on_delete=models.CASCADE, related_name="replay_requests"
    )
    template = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    state = models.CharField(max_length=16, choices=ReplayState.choices, default=ReplayState.QUEUED)
    # Deliveries that started it: a worker that dies mid-replay has its job delivered
    # again, at most JOB_MAX_TRIES times in all.
    tries = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    result = models.ForeignKey(
        ValidationSnapshot, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["original", "state"], name="replayrequest_original")]

    def __str__(self) -> str:
        return f"replay request {self.pk} of validation {self.original_id}: {self.state}"

    @property
    def pending(self) -> bool:
        return self.state in (ReplayState.QUEUED, ReplayState.RUNNING)


class ValidationFailure(models.Model):
    """Append-only: a validation job that crashed before its verdict (not a validator
    error, which is a verdict). Counted per attempt to stop a job that fails the same
    way every time after JOB_MAX_TRIES, with the error shown to a person."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="validation_failures")
    attempt_index = models.PositiveIntegerField()
    error = models.TextField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["task", "attempt_index"], name="validationfailure_attempt")]

    def __str__(self) -> str:
        return f"task {self.task_id} attempt {self.attempt_index}: {self.error[:60]}"
