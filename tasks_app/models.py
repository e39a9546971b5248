"""Tasks, their events and feedback, agent runs and their transcripts (SPEC S, E1, X2)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from tasks_app import states
from tasks_app.states import TaskStatus

__all__ = [
    "ApiToken",
    "Feedback",
    "KnowledgeDocument",
    "LLMRequestSnapshot",
    "Run",
    "RunMessage",
    "Task",
    "TaskEvent",
    "TaskStatus",
]

# Columns that can be megabytes; list queries defer them.
TASK_BIG_FIELDS = ("request", "rules", "final_answer", "plan")


class ValidationPolicy(models.TextChoices):
    ALWAYS = "always", "Always validate"
    NEVER = "never", "Never validate"
    KEYWORDS = "keywords", "Validate when the request mentions a keyword"


class ValidationOutcome(models.TextChoices):
    ACCEPTED = "accepted", "Accepted by the validator"
    FORCE_ACCEPTED = "force_accepted", "Delivered without validator endorsement"


class TaskQuerySet(models.QuerySet["Task"]):
    def for_list(self) -> TaskQuerySet:
        """Rows for list pages and the API list: never load the big text columns."""
        return self.defer(*TASK_BIG_FIELDS).select_related("owner", "claimed_by")

    def visible_to(self, user: Any) -> TaskQuerySet:
        """Requesters see their own tasks; reviewers and operators see all (A2)."""
        from tasks_app.roles import is_staff_role

        if is_staff_role(user):
            return self
        return self.filter(owner=user)

    def needs_review(self) -> TaskQuerySet:
        return self.filter(status=TaskStatus.NEEDS_REVIEW)

    def open(self) -> TaskQuerySet:
        return self.filter(status__in=states.OPEN_STATUSES)

    def execution_active(self) -> TaskQuerySet:
        return self.filter(status__in=states.EXECUTION_ACTIVE_STATUSES)

    def requiring_user_action(self) -> TaskQuerySet:
        return self.filter(status__in=states.USER_ACTION_STATUSES)

    def runnable(self) -> TaskQuerySet:
        """Tasks a scheduler may start an attempt for; never needs_review (S4)."""
        return self.filter(status__in=states.RUNNABLE_STATUSES)


class Task(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks"
    )
    title = models.CharField(max_length=300)
    request = models.TextField()
    rules = models.TextField(blank=True, default="")
    # A validated team or single plan (tasks_app.agents.plans); {} means single agent.
    plan = models.JSONField(default=dict, blank=True)
    validation_policy = models.CharField(
        max_length=16, choices=ValidationPolicy.choices, default=ValidationPolicy.ALWAYS
    )
    validation_keywords = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=32, choices=TaskStatus.choices, default=TaskStatus.OPEN)
    # Bumped by every transition; a UI action carries the version it saw (U3 stale check).
    version = models.PositiveIntegerField(default=0)
    attempt_count = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=2)
    final_answer = models.TextField(blank=True, default="")
    # V3: null means "validation did not run", distinct from both outcomes.
    validation_outcome = models.CharField(  # noqa: DJ001
        max_length=16, choices=ValidationOutcome.choices, null=True, blank=True
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="claimed_tasks",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Attempt lease (X1): the worker running the current attempt holds this token and
    # refreshes heartbeat_at; every result write is fenced by the token.
    lease_token = models.CharField(max_length=64, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    requeue_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["status", "created_at"], name="task_status_created"),
            models.Index(fields=["owner", "status"], name="task_owner_status"),
            models.Index(fields=["created_at"], name="task_created"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def is_open(self) -> bool:
        return states.is_open(self.status)

    @property
    def is_execution_active(self) -> bool:
        return states.is_execution_active(self.status)

    @property
    def requires_user_action(self) -> bool:
        return states.requires_user_action(self.status)

    @property
    def is_terminal(self) -> bool:
        return self.status in states.TERMINAL_STATUSES

    def claim_is_live(self, now: Any = None) -> bool:
        if self.claimed_by_id is None or self.claimed_at is None:
            return False
        now = now or timezone.now()
        age = (now - self.claimed_at).total_seconds()
        return age < settings.REVIEW_CLAIM_TIMEOUT_SECONDS


class TaskEvent(models.Model):
    """Append-only record of every status change (S3)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events")
    from_status = models.CharField(max_length=32, choices=TaskStatus.choices)
    to_status = models.CharField(max_length=32, choices=TaskStatus.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    # "system" for jobs, "validator" for verdicts, "user" for people.
    actor_kind = models.CharField(max_length=16, default="system")
    reason = models.TextField(blank=True, default="")
    attempt_index = models.PositiveIntegerField(default=0)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["task", "at"], name="taskevent_task_at")]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.from_status} -> {self.to_status}"


class FeedbackAction(models.TextChoices):
    SATISFIED = "satisfied", "Satisfied"
    REVISE = "revise", "Revise"
    ABANDON = "abandon", "Abandon"
    NOTE = "note", "Note"


class Feedback(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="feedback")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    action = models.CharField(max_length=16, choices=FeedbackAction.choices)
    comment = models.TextField(blank=True, default="")
    attempt_index = models.PositiveIntegerField(default=0)
    # The validator's last status when the person decided (V10 agreement).
    validator_status = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["task", "created_at"], name="feedback_task_created")]

    def __str__(self) -> str:
        return f"{self.action} on task {self.task_id}"


class RunKind(models.TextChoices):
    MAIN = "main", "Main"
    TEAM_NODE = "team_node", "Team node"
    SYNTHESIS = "synthesis", "Synthesis"


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


class Run(models.Model):
    """One agent execution within an attempt (E1)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    attempt_index = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.MAIN)
    node_id = models.CharField(max_length=100, blank=True, default="")
    node_role = models.CharField(max_length=200, blank=True, default="")
    # Position in the team graph; results are ordered by it, not by completion (X4).
    graph_index = models.PositiveIntegerField(default=0)
    session_id = models.UUIDField(default=uuid.uuid4)
    model_name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.RUNNING)
    finish_reason = models.CharField(max_length=64, blank=True, default="")
    output_text = models.TextField(blank=True, default="")
    usage = models.JSONField(default=dict, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    tool_iterations = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["attempt_index", "graph_index", "id"]
        indexes = [models.Index(fields=["task", "attempt_index"], name="run_task_attempt")]

    def __str__(self) -> str:
        node = f" {self.node_id}" if self.node_id else ""
        return f"run {self.pk} (task {self.task_id} attempt {self.attempt_index} {self.kind}{node})"


class RunMessage(models.Model):
    """One message of a run's transcript, in order (E1)."""

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
    """Compact record of one model request (X2); the full request only in debug mode."""

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
    full_request = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "iteration", "id"]

    def __str__(self) -> str:
        return f"run {self.run_id} request {self.iteration} ({self.model_name})"


class KnowledgeDocumentQuerySet(models.QuerySet["KnowledgeDocument"]):
    def for_list(self) -> KnowledgeDocumentQuerySet:
        return self.defer("body")


class KnowledgeDocument(models.Model):
    """A document of the knowledge base the agents search (X8).

    On PostgreSQL a GIN index over ``to_tsvector('english', title || ' ' || body)``
    (created in migration 0002) backs full-text search.
    """

    title = models.CharField(max_length=500)
    body = models.TextField()
    source_url = models.CharField(max_length=2000, blank=True, default="")
    # Where it was imported from (file name), so a re-import updates instead of copying.
    source_key = models.CharField(max_length=500, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KnowledgeDocumentQuerySet.as_manager()

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for programs (A2). Only the hash is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @staticmethod
    def generate_raw() -> str:
        return "evd_" + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
