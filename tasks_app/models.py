"""Tasks, their events and feedback, agent runs and their transcripts (S, E1, X2)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from project.roles import is_staff_role
from tasks_app import states
from tasks_app.states import TaskStatus

__all__ = [
    "ApiToken",
    "ClaimEvent",
    "ClaimEventKind",
    "IdempotencyKey",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookEndpoint",
    "Feedback",
    "KnowledgeDocument",
    "LLMRequestSnapshot",
    "Run",
    "RunMessage",
    "ServiceHeartbeat",
    "Task",
    "TaskEvent",
    "TaskStatus",
    "TaskStatusCount",
]

# The runtime's final answer when it has none (X3); never validated as an answer.
NO_USABLE_ANSWER = (
    "The agent could not produce a usable answer: the tool budget was spent and the final "
    "answer call failed or returned nothing. The evidence gathered so far is kept."
)

# Columns that can be megabytes; list queries defer them.
TASK_BIG_FIELDS = ("request", "rules", "final_answer", "plan")


class ValidationPolicy(models.TextChoices):
    ALWAYS = "always", "Always validate"
    NEVER = "never", "Never validate"
    KEYWORDS = "keywords", "Validate when the request mentions a keyword"


class ValidationOutcome(models.TextChoices):
    ACCEPTED = "accepted", "Accepted by the validator"
    FORCE_ACCEPTED = "force_accepted", "Delivered without validator endorsement"


class TaskAgent(models.TextChoices):
    """Who produces a task's attempts: the built-in runtime or a program outside
    (issue 14), which submits them through the API and never gets a job queued."""

    INTERNAL = "internal", "Evidentia's agent runtime"
    EXTERNAL = "external", "An external agent (submits attempts through the API)"


class TaskQuerySet(models.QuerySet["Task"]):
    def for_list(self) -> TaskQuerySet:
        """Rows for list pages and the API list: never load the big text columns."""
        return self.defer(*TASK_BIG_FIELDS).select_related("owner", "claimed_by", "assigned_to")

    def visible_to(self, user: Any) -> TaskQuerySet:
        """Requesters see their own tasks; reviewers and operators see all (A2)."""

        if is_staff_role(user):
            return self
        return self.filter(owner=user)

    def needs_review(self) -> TaskQuerySet:
        return self.filter(status=TaskStatus.NEEDS_REVIEW)

    def open(self) -> TaskQuerySet:
        return self.filter(status__in=states.OPEN_STATUSES)


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
    agent = models.CharField(max_length=16, choices=TaskAgent.choices, default=TaskAgent.INTERNAL)
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
    # Optional queue assignment (issue 13): who is expected to review it. Unlike a claim
    # it does not expire and does not stop anyone else from acting.
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assigned_tasks",
    )
    # Attempt lease (X1): the worker running the current attempt holds this token and
    # refreshes heartbeat_at; every result write is fenced by the token.
    lease_token = models.CharField(max_length=64, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Infrastructure re-runs (issue 17): how often an attempt of this task was run again
    # because its worker died (re-queued by the reaper, or taken over by a redelivered
    # job), capped by ATTEMPT_MAX_REQUEUES. They are not attempts: max_attempts counts
    # only the answers the validator judged.
    requeue_count = models.PositiveIntegerField(default=0)
    # Set by task_transition when the reaper re-queues an attempt whose worker died: the
    # next claim re-runs the same attempt (same attempt_count) instead of starting one.
    attempt_interrupted = models.BooleanField(default=False, db_default=False)
    # The id of the last job sent for this task (its attempt or its validation), written
    # in the transaction that sends it: the reaper re-sends a job only when the broker no
    # longer holds this id (lost), never while it waits in a queue (issue 16).
    job_id = models.CharField(max_length=64, blank=True, default="")
    # When the reaper last re-sent this task's job because the broker had lost it: the
    # marker that spaces re-sends one lease period apart (issue 11). ``updated_at`` only
    # says the row changed; a re-send does not touch it.
    resent_at = models.DateTimeField(null=True, blank=True)
    # Set by the validation job before it calls the validator model: a second copy of the
    # job (redelivery, reaper) finds it claimed and does not call the model again.
    validation_claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        # The lists order by (created_at, id); with the id in the index a page's ids are
        # an index-only scan, however deep the page (issue 16: project.pagination).
        indexes = [
            models.Index(fields=["status", "created_at", "id"], name="task_status_created_id"),
            models.Index(fields=["owner", "status"], name="task_owner_status"),
            models.Index(fields=["created_at", "id"], name="task_created_id"),
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

    @property
    def is_external(self) -> bool:
        return self.agent == TaskAgent.EXTERNAL

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
        indexes = [
            models.Index(fields=["task", "at"], name="taskevent_task_at"),
            # The review queue's "decided today" (issue 16): people's decisions on tasks
            # waiting for review, by time; without it each queue load read every event.
            models.Index(
                fields=["at"],
                name="taskevent_review_decided",
                condition=models.Q(from_status="needs_review", actor__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.from_status} -> {self.to_status}"


class ClaimEventKind(models.TextChoices):
    CLAIMED = "claimed", "Claimed"
    TAKEN_OVER = "taken_over", "Claim taken over"
    RELEASED = "released", "Claim released"


class ClaimEvent(models.Model):
    """Append-only record of a review claim changing hands (issue 11, U3): who, when, and
    who held it before. Written by ``task_claim``, ``task_release_claim`` and by
    ``task_transition`` when a task leaves review with a claim still on it."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="claim_events")
    kind = models.CharField(max_length=16, choices=ClaimEventKind.choices)
    # Who acted: the reviewer claiming or releasing, or the person (or nobody: a job)
    # whose transition ended the claim.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    actor_kind = models.CharField(max_length=16, default="user")
    # The claim's holder just before this event (null: nobody held it), and since when.
    previous_holder = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    previous_claimed_at = models.DateTimeField(null=True, blank=True)
    # The task's status and attempt when it happened (claims do not change them).
    task_status = models.CharField(max_length=32, choices=TaskStatus.choices)
    attempt_index = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, default="")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["task", "at"], name="claimevent_task_at")]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.kind}"


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


# The finish_reason of a run a dead worker left when a redelivered job took its attempt
# over, or when the reaper re-queued it (issue 17): the attempt is re-run under the same
# index, so these runs are kept as evidence but left out of its validation packet.
RUN_TAKEN_OVER = "taken_over"
RUN_LEASE_EXPIRED = "lease_expired"
RUN_ABANDONED_BY_DEAD_WORKER = frozenset({RUN_TAKEN_OVER, RUN_LEASE_EXPIRED})


class Run(models.Model):
    """One agent execution within an attempt (E1)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    attempt_index = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=RunKind.choices, default=RunKind.MAIN)
    node_id = models.CharField(max_length=100, blank=True, default="")
    node_role = models.CharField(max_length=200, blank=True, default="")
    # The name an external agent gave this run within its attempt (issue 14), so streamed
    # events can name the run they belong to; "" for runs of the built-in runtime.
    external_key = models.CharField(max_length=100, blank=True, default="")
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
    # Cost in money, priced with genai-prices per request and summed at finish (issue 18);
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
    # that are neither chat nor tool calls (issue 15).
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["attempt_index", "graph_index", "id"]
        indexes = [
            models.Index(fields=["task", "attempt_index"], name="run_task_attempt"),
            # Cost per day on the operator overview (issue 18).
            models.Index(fields=["started_at"], name="run_started"),
        ]

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
    # Cost in money, priced with genai-prices when the row was written (issue 18);
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
    """Identity of a tool result for de-duplication (E5): same tool, same content."""
    return hashlib.sha256(f"{tool_name}\x00{content}".encode()).hexdigest()


class ToolEvidenceQuerySet(models.QuerySet["ToolEvidence"]):
    def without_content(self) -> ToolEvidenceQuerySet:
        """List rows without the (possibly multi-megabyte) content column."""
        return self.defer("content", "event_payload")


class ToolEvidence(models.Model):
    """One tool result, written the moment the tool returns (E2)."""

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
        # Created by evidence_app and moved here with its table (migration 0016).
        db_table = "evidence_app_toolevidence"
        ordering = ["run", "sequence"]
        indexes = [
            # An attempt's results (packets), and the task page's first results in list
            # order read without sorting the others (20,000 in an attempt, issue 26).
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
        self.content_chars = len(self.content)
        self.content_sha256 = content_digest(self.tool_name, self.content)
        super().save(*args, **kwargs)


class ServiceHeartbeat(models.Model):
    """Liveness of a background process, written by the process itself (issue 18).

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


class KnowledgeDocumentQuerySet(models.QuerySet["KnowledgeDocument"]):
    def for_list(self) -> KnowledgeDocumentQuerySet:
        return self.defer("body")


class KnowledgeDocument(models.Model):
    """A document of the knowledge base the agents search (X8).

    On PostgreSQL a GIN index over the weighted title + body vector that
    ``search_knowledge`` matches (migration 0004) backs full-text search.
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


class IdempotencyKey(models.Model):
    """The first successful response to a request sent with an ``Idempotency-Key``
    header, so a retried request returns it instead of doing the work again (issue 14).
    Scoped to the user and the endpoint; kept ``IDEMPOTENCY_KEY_TTL_SECONDS`` (24 h)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys"
    )
    # e.g. "POST /tasks/17/attempts": the same key on another endpoint is another request.
    endpoint = models.CharField(max_length=200)
    key = models.CharField(max_length=255)
    # SHA-256 of the request body: the same key with another body is refused, not replayed.
    request_sha256 = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "endpoint", "key"], name="idempotency_user_endpoint_key_unique"
            )
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.endpoint} [{self.key}]"


class WebhookEvent(models.TextChoices):
    """The events an endpoint can subscribe to (issue 14)."""

    TASK_NEEDS_REVIEW = "task.needs_review", "Task needs review"
    TASK_AWAITING_FEEDBACK = "task.awaiting_feedback", "Task awaits feedback"
    TASK_NEEDS_REVISION = "task.needs_revision", "Task needs a revision"
    TASK_CLOSED = "task.closed", "Task closed"
    TASK_FAILED = "task.failed", "Task failed"
    TASK_ABANDONED = "task.abandoned", "Task abandoned"
    VALIDATION_COMPLETED = "validation.completed", "Validation completed"


class WebhookEndpoint(models.Model):
    """A URL that receives signed event deliveries for its owner's tasks (issue 14).

    The secret is kept in clear: signing needs it. It is shown to its owner once, when
    the endpoint is registered, and never again by the API or the UI."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    # The token it was registered with, if any: revoking the token stops its deliveries.
    api_token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="webhooks"
    )
    url = models.CharField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "is_active"], name="webhook_owner_active")]

    def __str__(self) -> str:
        return f"webhook {self.pk} -> {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the outbox row, written in the transaction of the
    status change that caused it, and sent by a job after commit (issue 14). Its
    ``msg_id`` is the ``webhook-id`` of every attempt, so receivers can de-duplicate."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="webhook_deliveries")
    event_type = models.CharField(max_length=40, choices=WebhookEvent.choices)
    msg_id = models.CharField(max_length=64, unique=True)
    # The exact JSON text that is signed and sent (the same bytes on every attempt).
    payload = models.TextField()
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A sender holds the delivery until then (claimed with a conditional UPDATE).
    locked_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["endpoint", "task", "status", "id"], name="delivery_queue"),
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} for task {self.task_id} -> endpoint {self.endpoint_id}"


class WebhookDeliveryAttempt(models.Model):
    """One HTTP request of a delivery: what the receiver answered, or why it did not."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    attempted_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    response_excerpt = models.TextField(blank=True, default="")
    # "retry" (will be tried again), "delivered", "gave_up" (4xx or past the window).
    outcome = models.CharField(max_length=16, default="")

    class Meta:
        ordering = ["attempted_at", "id"]

    def __str__(self) -> str:
        return f"delivery {self.delivery_id} attempt at {self.attempted_at}: {self.status_code}"


# Shards per status in TaskStatusCount: concurrent transitions of different tasks rarely
# wait on the same counter row.
STATUS_COUNT_SHARDS = 16


class TaskStatusCount(models.Model):
    """How many tasks are in each status (issue 16), kept by PostgreSQL triggers on
    ``tasks_app_task`` in the writing transaction (migration 0006): insert, delete and
    COPY per statement, a status change per row. Counts per status are then a sum over
    a few rows instead of a scan of the task table. Spread over shards (task id modulo
    ``STATUS_COUNT_SHARDS``). Not maintained on SQLite (counts are computed there)."""

    status = models.CharField(max_length=32, choices=TaskStatus.choices)
    shard = models.PositiveSmallIntegerField()
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["status", "shard"], name="taskstatuscount_unique")
        ]

    def __str__(self) -> str:
        return f"{self.status}[{self.shard}] = {self.n}"


class OtlpTraceState(models.TextChoices):
    COLLECTING = "collecting", "Collecting spans"
    SUBMITTED = "submitted", "Submitted as an attempt"
    UNUSABLE = "unusable", "Could not become an attempt"


class OtlpTrace(models.Model):
    """One OpenTelemetry trace sent to the OTLP endpoint (issue 15): its spans are stored
    as they arrive, and the trace becomes one external attempt when it is complete."""

    trace_id = models.CharField(max_length=32, unique=True)
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

    class Meta:
        indexes = [models.Index(fields=["state", "last_span_at"], name="otlptrace_state_last")]

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


class OutboxJobQuerySet(models.QuerySet["OutboxJob"]):
    def unpublished(self) -> OutboxJobQuerySet:
        return self.filter(published_at__isnull=True)


class OutboxJob(models.Model):
    """A background job recorded in the transaction of the work that needs it (issue 17:
    the transactional outbox). Published to the broker right after the commit when the
    broker answers, else by the relay (``tasks_app.outbox``) once it is back: a request
    never fails after its write committed, and no job is lost with the broker."""

    name = models.CharField(max_length=200)  # the Celery job name, e.g. tasks_app.run_attempt
    args = models.JSONField(default=list, blank=True)
    # Chosen before sending, so the reaper can ask the broker whether it still holds it.
    job_id = models.CharField(max_length=36, unique=True)
    # The Evidentia task the job works for (log lines name it); not a foreign key, so the
    # outbox never holds up deleting a task (its job then finds nothing to do).
    task_ref = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # A job that must not run before this time (a countdown, e.g. an OTLP trace's quiet
    # period): published with it as the job's ETA, whenever the publication happens.
    not_before = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    objects = OutboxJobQuerySet.as_manager()

    class Meta:
        indexes = [
            # The relay reads the waiting rows oldest first; published ones are purged.
            models.Index(
                fields=["id"],
                name="outbox_waiting",
                condition=models.Q(published_at__isnull=True),
            ),
            models.Index(fields=["published_at"], name="outbox_published"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.job_id}"
