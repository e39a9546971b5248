"""Validation snapshots, replay requests and validation failures; the tool
evidence they judge is stored by tasks_app (``tasks_app.models.ToolEvidence``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from evidence_app.judge_models import (
    ComparisonState,
    JudgeComparison,
    JudgeDefault,
    ShadowJudge,
    ShadowState,
    ShadowVerdict,
)
from tasks_app.records import Task

__all__ = [
    "ValidationSnapshot",
    "ValidationStatus",
    "FailureCategory",
    "ReplayRequest",
    "ReplayState",
    "ValidationFailure",
    "VerdictRoute",
    "Audit",
    "AuditState",
    "ClaimLabel",
    "ClaimStance",
    "ComparisonState",
    "JudgeComparison",
    "JudgeDefault",
    "ShadowJudge",
    "ShadowState",
    "ShadowVerdict",
    "ThresholdState",
    "AutoAcceptThreshold",
    "TaskAuditSettings",
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
    # Issue 27: the second judge on the same rendered input (it moves the task only
    # through the pair's rule), and a candidate judging in shadow (it never moves it).
    SECOND = "second", "Second judge"
    SHADOW = "shadow", "Shadow candidate"


class VerdictRoute(models.TextChoices):
    """Where an original verdict sent the task: straight to the requester, back
    for another attempt or to failed without a person, or to a person. The audit stream
    draws only from the automatic routes; the certified rates are over them."""

    AUTO_ACCEPTED = "auto_accepted", "Accepted without a person"
    AUTO_REJECTED = "auto_rejected", "Rejected without a person"
    TO_PERSON = "to_person", "Sent to a person"


# The length of the stored rendered input, from the count written with it: measuring the
# column itself reads (and decompresses) a body of up to tens of megabytes.
STORED_INPUT_CHARS = models.Case(
    models.When(prompt_stored=True, then=models.F("rendered_input_chars")),
    default=models.Value(0),
    output_field=models.PositiveIntegerField(),
)


class ValidationSnapshotQuerySet(models.QuerySet["ValidationSnapshot"]):
    def without_bodies(self) -> ValidationSnapshotQuerySet:
        return self.defer("rendered_input", "system_prompt", "raw_responses")

    def originals(self) -> ValidationSnapshotQuerySet:
        return self.filter(kind=SnapshotKind.VALIDATION)


class ValidationSnapshot(models.Model):
    """Everything needed to understand one validator decision."""

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
    # with genai-prices when it was made; null means "cost unknown", never zero.
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
    # Issue 27: where this verdict sent the task ("" on replays, companions and verdicts
    # made before routes were recorded), and the probability with which it was drawn for
    # an audit (null: not eligible). Every eligible verdict records it, drawn or not.
    route = models.CharField(
        max_length=16, choices=VerdictRoute.choices, blank=True, default="", db_default=""
    )
    audit_probability = models.FloatField(null=True, blank=True)
    # A second-judge or shadow snapshot: the original verdict it judged beside.
    companion_of = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="companions"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ValidationSnapshotQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "attempt_index"], name="validation_task_attempt"),
            models.Index(fields=["status", "created_at"], name="validation_status_created"),
            # Cost per day on the operator overview.
            models.Index(fields=["created_at"], name="validation_created"),
            # The certified rates read the eligible verdicts of a period.
            models.Index(
                fields=["route", "created_at"],
                name="validation_route_created",
                condition=models.Q(audit_probability__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.kind} {self.pk} task {self.task_id} attempt {self.attempt_index}: {self.status}"
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The pages read the input's size from its count (``STORED_INPUT_CHARS``): a row
        # written with a body and no count gets the body's.
        if self.rendered_input and not self.rendered_input_chars:
            self.rendered_input_chars = len(self.rendered_input)
        super().save(*args, **kwargs)

    @property
    def passed(self) -> bool:
        """Derived from status, never stored on its own."""
        return self.status == ValidationStatus.ACCEPTED


class ReplayState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Done"
    FAILED = "failed", "Failed"


class ReplayRequest(models.Model):
    """An operator's request to replay one validation: what was asked and where it
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


class AuditState(models.TextChoices):
    OPEN = "open", "Waiting for a person"
    DONE = "done", "Judged"


class AuditQuerySet(models.QuerySet["Audit"]):
    def open(self) -> AuditQuerySet:
        return self.filter(state=AuditState.OPEN)

    def done(self) -> AuditQuerySet:
        return self.filter(state=AuditState.DONE)


class Audit(models.Model):
    """A verdict drawn at random for a blind audit: a person judges the answer
    against the request and the evidence without seeing the validator's verdict, and the
    recorded probability makes the estimate over all eligible verdicts unbiased. The
    task's own flow never waits for it."""

    snapshot = models.OneToOneField(
        ValidationSnapshot, on_delete=models.CASCADE, related_name="audit"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="audits")
    attempt_index = models.PositiveIntegerField()
    # The audited verdict's route (auto_accepted or auto_rejected) and the probability it
    # was drawn with; template version and model are copied for grouping.
    route = models.CharField(max_length=16, choices=VerdictRoute.choices)
    probability = models.FloatField()
    template_version = models.CharField(max_length=100, default="")
    model_name = models.CharField(max_length=200, default="")
    state = models.CharField(max_length=8, choices=AuditState.choices, default=AuditState.OPEN)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The person's call: is the answer correct (supported by the evidence and doing what
    # the request asked)? Null until judged.
    correct = models.BooleanField(null=True, blank=True)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    first_viewed_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    # False when the person who judged it had seen the task's verdict, route or status
    # before judging (an AuditExposure of theirs): the judgement is kept and shown but
    # left out of the certified figures and counted apart.
    blind = models.BooleanField(default=True)
    # The judge's own first view of the audit page (AuditView of the judge), copied at
    # the judgement; null when they judged without opening it (time per item).
    judge_first_viewed_at = models.DateTimeField(null=True, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["state", "created_at"], name="audit_state_created"),
            models.Index(fields=["task"], name="audit_task"),
        ]

    def __str__(self) -> str:
        return f"audit {self.pk} of validation {self.snapshot_id}: {self.state}"

    @property
    def false_verdict(self) -> bool | None:
        """Whether the person contradicts the validator (a false accept or a false
        reject); None until judged."""
        if self.correct is None:
            return None
        if self.route == VerdictRoute.AUTO_ACCEPTED:
            return not self.correct
        return self.correct


class TaskAuditSettings(models.Model):
    """A task's own audit rates and second judge, kept beside the task (issue 45: the task
    knows nothing of audits). Only a task created with one of them has a row; without one
    every value is its default: the settings' rates (AUDIT_RATE, AUDIT_REJECT_RATE) and
    the setting's second judge (VALIDATOR_SECOND_MODEL). Written once, when the task is
    created (``evidence_app.validation.task_settings``)."""

    task = models.OneToOneField(
        Task, on_delete=models.CASCADE, primary_key=True, related_name="audit_settings"
    )
    # The share of this task's auto-accepted (and auto-rejected) verdicts drawn for a
    # blind audit; null: AUDIT_RATE (AUDIT_REJECT_RATE).
    audit_rate = models.FloatField(null=True, blank=True)
    audit_reject_rate = models.FloatField(null=True, blank=True)
    # A rate below the deployment's floor (AUDIT_RATE, AUDIT_REJECT_RATE) is an
    # operator's exception, recorded: who set it, when and why.
    audit_rate_set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    audit_rate_set_at = models.DateTimeField(null=True, blank=True)
    audit_rate_reason = models.TextField(blank=True, default="")
    # A second validator model for this task ("": VALIDATOR_SECOND_MODEL; "none": no
    # second judge even when the setting names one). Disagreement goes to a person.
    second_model = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return f"audit settings of task {self.task_id}"


class AuditView(models.Model):
    """When one person first opened an audit's page (time per item counts from the
    judge's own first view, not from whoever opened it first). One row per (audit,
    person)."""

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="views")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    first_viewed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "user"], name="auditview_unique"),
        ]

    def __str__(self) -> str:
        return f"audit {self.audit_id} first viewed by {self.user_id}"


class AuditExposure(models.Model):
    """A person reached, while an audit was open, something of its task that tells what
    the validator decided or where the task went (its page, a list row with its status,
    the API, its events): their judgement of that audit is then not blind.
    One row per (audit, person): the first such view, with the channel it came by."""

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="exposures")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "user"], name="auditexposure_unique"),
        ]

    def __str__(self) -> str:
        return f"audit {self.audit_id} exposed to {self.user_id} by {self.channel}"


class ClaimStance(models.TextChoices):
    SUPPORTED = "supported", "Supported"
    UNSUPPORTED = "unsupported", "Unsupported"
    CONTRADICTED = "contradicted", "Contradicted"


class ClaimLabel(models.Model):
    """A person's verdict on one claim of a judged answer, given while deciding
    a task or judging an audit: per-claim agreement with the validator, and labelled
    cases for judge_bench. ``judge_verdict`` is the validator's verdict on that claim in
    the snapshot, copied when the label is written."""

    snapshot = models.ForeignKey(
        ValidationSnapshot, on_delete=models.CASCADE, related_name="claim_labels"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="claim_labels")
    claim_index = models.PositiveIntegerField()
    claim_text = models.TextField()
    label = models.CharField(max_length=16, choices=ClaimStance.choices)
    judge_verdict = models.CharField(max_length=16, blank=True, default="")
    # A citation the person corrected: {"evidence_id": int, "quote": str}; {} when none.
    corrected_citation = models.JSONField(default=dict, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    feedback = models.ForeignKey(
        "tasks_app.Feedback",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="claim_labels",
    )
    audit = models.ForeignKey(
        Audit, on_delete=models.SET_NULL, null=True, blank=True, related_name="claim_labels"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["snapshot_id", "claim_index", "created_at", "id"]
        indexes = [
            models.Index(fields=["snapshot", "claim_index"], name="claimlabel_snapshot"),
            models.Index(fields=["created_at"], name="claimlabel_created"),
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_index} of validation {self.snapshot_id}: {self.label}"


# --- Auto-accept at a certified risk ---------------------------------------------------------


class ThresholdState(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    SHADOW = "shadow", "In shadow"
    APPROVED = "approved", "Approved"
    RETIRED = "retired", "Retired"


class AutoAcceptThresholdQuerySet(models.QuerySet["AutoAcceptThreshold"]):
    def for_judge(self, template_version: str, model_name: str) -> AutoAcceptThresholdQuerySet:
        return self.filter(template_version=template_version, model_name=model_name)

    def approved(self) -> AutoAcceptThresholdQuerySet:
        return self.filter(state=ThresholdState.APPROVED)

    def pending(self) -> AutoAcceptThresholdQuerySet:
        return self.filter(state__in=(ThresholdState.PROPOSED, ThresholdState.SHADOW))


class AutoAcceptThreshold(models.Model):
    """One certification of one judge (template version × model: a task's second judge
    never changes whose threshold applies): the
    score τ above which its accepted verdicts may go to the requester without a person,
    certified on labelled verdicts (``evidence_app.autoaccept``). Proposed by the
    background job, watched in shadow, then approved by an operator; an approved one is
    the judge's threshold until a newer one is approved (it is then retired) or its
    audits show drift, or an operator stops it (``stopped_at``: every accepted verdict of
    the judge goes to a person until a new threshold is approved). Rows are never
    deleted: they are the history of the judge's thresholds."""

    template_version = models.CharField(max_length=100)
    model_name = models.CharField(max_length=200)
    state = models.CharField(
        max_length=16, choices=ThresholdState.choices, default=ThresholdState.PROPOSED
    )
    # Null: no threshold could be certified on these labels (nothing on a score).
    threshold = models.FloatField(null=True, blank=True)
    target = models.FloatField()
    delta = models.FloatField()
    labelled = models.PositiveIntegerField(default=0)
    # The weighted share of labelled accepts at or above τ, their false-accept rate and
    # its one-sided upper bound at 1 - delta.
    automated = models.FloatField(default=0.0)
    risk = models.FloatField(null=True, blank=True)
    upper = models.FloatField(null=True, blank=True)
    guarantee = models.TextField(blank=True, default="")
    # The coverage–risk curve, downsampled: [{"threshold", "accepted", "coverage",
    # "risk", "upper"}, ...], strictest first.
    curve = models.JSONField(default=list, blank=True)
    computed_at = models.DateTimeField(default=timezone.now)
    shadow_started_at = models.DateTimeField(null=True, blank=True)
    shadow_started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    retired_at = models.DateTimeField(null=True, blank=True)
    # The drift rule on the audits of its auto-accepts since it was approved: the
    # audits, the wrong ones, the CUSUM, and when it stopped auto-accept (null: not).
    drift_audits = models.PositiveIntegerField(default=0)
    drift_wrong = models.PositiveIntegerField(default=0)
    drift_statistic = models.FloatField(default=0.0)
    stopped_at = models.DateTimeField(null=True, blank=True)
    # Who stopped it and why: an operator's switch (``stopped_by`` set, with the reason
    # they gave), or the drift rule (``stopped_by`` null, the reason in its words).
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    stop_reason = models.TextField(blank=True, default="")

    objects = AutoAcceptThresholdQuerySet.as_manager()

    class Meta:
        ordering = ["-computed_at", "-id"]
        constraints = [
            # Two operators approving at once: one approved threshold per judge.
            models.UniqueConstraint(
                fields=["template_version", "model_name"],
                condition=models.Q(state="approved"),
                name="autoacceptthreshold_one_approved",
            )
        ]
        indexes = [
            models.Index(
                fields=["template_version", "model_name", "state"],
                name="autoacceptthreshold_judge",
            )
        ]

    def __str__(self) -> str:
        tau = "none" if self.threshold is None else f"{self.threshold:.3g}"
        return f"threshold {tau} of {self.template_version} on {self.model_name}: {self.state}"

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None
