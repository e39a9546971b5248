"""Tasks, their events, claims and feedback, and the status counts."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from project.roles import is_staff_role
from tasks_app.workflow import states
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.status_reasons import status_reason_words

# The runtime's final answer when it has none; never validated as an answer.
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
    """Who produces a task's attempts: the built-in runtime or a program outside,
    which submits them through the API and never gets a job queued."""

    INTERNAL = "internal", "Evidentia's agent runtime"
    EXTERNAL = "external", "An external agent (submits attempts through the API)"


class TaskQuerySet(models.QuerySet["Task"]):
    def for_list(self) -> TaskQuerySet:
        """Rows for list pages and the API list: never load the big text columns; each
        with the reason it is in its status (``Task.status_reason``)."""
        return (
            self.defer(*TASK_BIG_FIELDS)
            .select_related("owner", "claimed_by", "assigned_to")
            .with_status_reason()
        )

    def with_status_reason(self) -> TaskQuerySet:
        """Annotated ``status_event_reason``: the reason of the latest change into the
        task's current status (one correlated subquery on the events' task index)."""
        latest = TaskEvent.objects.filter(
            task=models.OuterRef("pk"), to_status=models.OuterRef("status")
        ).order_by("-at", "-id")
        return self.annotate(status_event_reason=models.Subquery(latest.values("reason")[:1]))

    def visible_to(self, user: Any) -> TaskQuerySet:
        """Requesters see their own tasks; reviewers and operators see all."""

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
    # A validated team or single plan (tasks_app.runtime.agents.plans); {} means single agent.
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
    # Optional queue assignment: who is expected to review it. Unlike a claim
    # it does not expire and does not stop anyone else from acting.
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assigned_tasks",
    )
    # Attempt lease: the worker running the current attempt holds this token and
    # refreshes heartbeat_at; every result write is fenced by the token.
    lease_token = models.CharField(max_length=64, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Infrastructure re-runs: how often an attempt of this task was run again
    # because its worker died (re-queued by the reaper, or taken over by a redelivered
    # job), capped by ATTEMPT_MAX_REQUEUES. They are not attempts: max_attempts counts
    # only the answers the validator judged.
    requeue_count = models.PositiveIntegerField(default=0)
    # Set by task_transition when the reaper re-queues an attempt whose worker died: the
    # next claim re-runs the same attempt (same attempt_count) instead of starting one.
    attempt_interrupted = models.BooleanField(default=False, db_default=False)
    # The id of the last job sent for this task (its attempt or its validation), written
    # in the transaction that sends it: the reaper re-sends a job only when the broker no
    # longer holds this id (lost), never while it waits in a queue.
    job_id = models.CharField(max_length=64, blank=True, default="")
    # When the reaper last re-sent this task's job because the broker had lost it: the
    # marker that spaces re-sends one lease period apart. ``updated_at`` only
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
        # an index-only scan, however deep the page (project.pagination).
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
    def status_reason(self) -> str:
        """Why the task is in its status, in one line (``status_reasons``); read from the
        list annotation when there is one, else from the latest change into it."""
        if hasattr(self, "status_event_reason"):
            reason = self.status_event_reason or ""
        else:
            reason = (
                self.events.filter(to_status=self.status)
                .order_by("-at", "-id")
                .values_list("reason", flat=True)
                .first()
                or ""
            )
        return status_reason_words(self.status, reason)

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
    """Append-only record of every status change."""

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
            # The review queue's "decided today": people's decisions on tasks
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
    """Append-only record of a review claim changing hands: who, when, and
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


class ReviewVisit(models.Model):
    """When a reviewer first opened a task's review page for one attempt (the
    review team's time per item, first view to decision). One row per (task, attempt,
    reviewer); later visits do not move it."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="review_visits")
    attempt_index = models.PositiveIntegerField(default=0)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_visits"
    )
    first_viewed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "attempt_index", "reviewer"], name="reviewvisit_unique"
            )
        ]
        indexes = [models.Index(fields=["first_viewed_at"], name="reviewvisit_viewed")]

    def __str__(self) -> str:
        return f"task {self.task_id} attempt {self.attempt_index} seen by {self.reviewer_id}"


class FeedbackAction(models.TextChoices):
    SATISFIED = "satisfied", "Satisfied"
    REVISE = "revise", "Revise"
    ABANDON = "abandon", "Abandon"
    NOTE = "note", "Note"


class DecisionState(models.TextChoices):
    """Where a decision stands in its undo window: ``pending`` until
    ``applies_at`` (it can be undone and nothing follows from it yet), then ``applied``
    by ``decision_apply``; ``undone`` by its author or staff inside the window; ``void``
    when the task had moved on before it could apply. Notes are ``applied`` at once."""

    PENDING = "pending", "Pending"
    APPLIED = "applied", "Applied"
    UNDONE = "undone", "Undone"
    VOID = "void", "Not applied"


class FeedbackQuerySet(models.QuerySet["Feedback"]):
    def in_effect(self) -> FeedbackQuerySet:
        """Decisions and notes that count: never a pending, undone or void decision."""
        return self.filter(state=DecisionState.APPLIED)

    def pending(self) -> FeedbackQuerySet:
        return self.filter(state=DecisionState.PENDING)


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
    state = models.CharField(
        max_length=16, choices=DecisionState.choices, default=DecisionState.APPLIED
    )
    # When a pending decision applies (the end of its undo window); null: applied at once.
    applies_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    undone_at = models.DateTimeField(null=True, blank=True)

    objects = FeedbackQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["task", "created_at"], name="feedback_task_created"),
            # The sweep and the page's "your decision applies in N s" read only these.
            models.Index(
                fields=["applies_at"],
                name="feedback_pending",
                condition=models.Q(state="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} on task {self.task_id}"

    @property
    def is_pending(self) -> bool:
        return self.state == DecisionState.PENDING

    def seconds_left(self, now: Any = None) -> int:
        """Whole seconds until a pending decision applies (0 when due or not pending)."""
        if not self.is_pending or self.applies_at is None:
            return 0
        left = (self.applies_at - (now or timezone.now())).total_seconds()
        return max(0, math.ceil(left))


# Shards per status in TaskStatusCount: concurrent transitions of different tasks rarely
# wait on the same counter row.
STATUS_COUNT_SHARDS = 16


class TaskStatusCount(models.Model):
    """How many tasks are in each status, kept by PostgreSQL triggers on
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


class OutboxJobQuerySet(models.QuerySet["OutboxJob"]):
    def unpublished(self) -> OutboxJobQuerySet:
        return self.filter(published_at__isnull=True)


class OutboxJob(models.Model):
    """A background job recorded in the transaction of the work that needs it (the
    transactional outbox). Published to the broker right after the commit when the
    broker answers, else by the relay (``tasks_app.workflow.outbox``) once it is back:
    a request never fails after its write committed, and no job is lost with the broker."""

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
