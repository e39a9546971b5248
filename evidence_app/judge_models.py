"""Changing the judge: the gate (the default judge, a candidate's comparison with it) and
shadow mode (a candidate judging beside the default, its verdicts stored and never acted
on). Gathered for Django by ``evidence_app.models``, which they stand under (a verdict is
a ``evidence_app.ValidationSnapshot``, named by its label here).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class JudgeDefault(models.Model):
    """The team's validator: the latest row is the judge of every verdict made after it
    (``evidence_app.validation.current_judge.current_judge``); with no row, DEFAULT_TEMPLATE and
    VALIDATOR_MODEL. Append-only: the rows are the history of changes."""

    template = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    chosen_at = models.DateTimeField(default=timezone.now)
    # The finished comparison the change was made from (the gate's evidence).
    comparison = models.ForeignKey(
        "JudgeComparison",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="defaults",
    )
    note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-chosen_at", "-id"]

    def __str__(self) -> str:
        return f"default judge {self.template} on {self.model} since {self.chosen_at:%Y-%m-%d}"


class ComparisonState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Done"
    FAILED = "failed", "Failed"


class JudgeComparison(models.Model):
    """A candidate template and model judged beside the current judge on the same
    labelled cases (``evidence_app.judges.gate.gate_cases``): each case's paired outcome
    and the figures of both, with McNemar's exact test on the pairs."""

    template = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    # The current judge when the comparison was asked for: what the candidate is held
    # against, whatever the default is by the time it runs.
    baseline_template = models.CharField(max_length=100)
    baseline_model = models.CharField(max_length=200)
    # Case ids or categories to keep ([]: every gate case).
    case_filter = models.JSONField(default=list, blank=True)
    state = models.CharField(
        max_length=16, choices=ComparisonState.choices, default=ComparisonState.QUEUED
    )
    # Deliveries in a row that made no progress (a worker that dies mid-slice): the
    # comparison is failed after JOB_MAX_TRIES of them, never left running.
    tries = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    # One entry per case: {"id", "dataset", "kind", "expected", "baseline", "candidate",
    # "baseline_correct", "candidate_correct"}; the figures once every case is judged.
    outcomes = models.JSONField(default=list, blank=True)
    figures = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state"], name="judgecomparison_state")]

    def __str__(self) -> str:
        return f"comparison {self.pk}: {self.template} on {self.model}: {self.state}"

    @property
    def pending(self) -> bool:
        return self.state in (ComparisonState.QUEUED, ComparisonState.RUNNING)

    @property
    def finished(self) -> bool:
        return self.state == ComparisonState.SUCCEEDED


class ShadowJudge(models.Model):
    """A candidate judging every new attempt in the background, beside the current judge,
    without moving any task (kind=shadow snapshots). At most one is active."""

    template = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(default=timezone.now)
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            # Two operators starting one at the same moment: one of them is refused.
            models.UniqueConstraint(
                fields=["active"], condition=models.Q(active=True), name="shadowjudge_one_active"
            )
        ]

    def __str__(self) -> str:
        return f"shadow judge {self.template} on {self.model}" + (
            "" if self.active else " (stopped)"
        )


class ShadowState(models.TextChoices):
    QUEUED = "queued", "Queued"
    DONE = "done", "Judged"
    FAILED = "failed", "Failed"


class ShadowVerdict(models.Model):
    """One original verdict a shadow judge is to judge too: queued in the original's
    transaction, then ``done`` with its shadow snapshot or ``failed`` with the reason
    (after JOB_MAX_TRIES deliveries at most)."""

    shadow = models.ForeignKey(ShadowJudge, on_delete=models.CASCADE, related_name="verdicts")
    original = models.ForeignKey(
        "evidence_app.ValidationSnapshot", on_delete=models.CASCADE, related_name="shadow_verdicts"
    )
    snapshot = models.OneToOneField(
        "evidence_app.ValidationSnapshot",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="shadow_verdict",
    )
    state = models.CharField(max_length=8, choices=ShadowState.choices, default=ShadowState.QUEUED)
    tries = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["shadow", "original"], name="shadowverdict_unique")
        ]

    def __str__(self) -> str:
        return f"shadow {self.shadow_id} on validation {self.original_id}: {self.state}"
