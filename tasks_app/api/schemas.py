"""Request and response schemas of the tasks API.

Field names are the product's words (docs/runtime.md, docs/validator.md) in snake_case.
Lists are ``{"items": [...], "count": N}``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db.models import Q
from ninja import FilterSchema, Schema
from pydantic import ConfigDict, Field, field_validator

from project.roles import is_staff_role
from project.schemas import (
    MAX_ID,
    NOT_BLANK,
    SECOND_MODEL_NAME,
    ClaimLabelIn,
    ClaimSummaryOut,
    ClaimVerdictOut,
    JsonBool,
    RequirementOut,
    Text,
    as_list,
    json_integer,
    not_blank,
)
from tasks_app.api.verdict_fields import verdict_fields
from tasks_app.intake.external import revision_feedback
from tasks_app.runtime.agents.plans import Plan
from tasks_app.runtime.selectors import attempt_summaries
from tasks_app.workflow import states
from tasks_app.workflow.models import ClaimEvent, Feedback, Task
from tasks_app.workflow.selectors import last_decision_on, pending_decision_on
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.task_settings import task_settings

# --- Tasks ------------------------------------------------------------------------------


class TaskCreateIn(Schema):
    model_config = ConfigDict(extra="forbid")

    request: str = Field(
        min_length=1,
        max_length=200_000,
        description="What the agent should do (not blank)",
        json_schema_extra={"pattern": NOT_BLANK},
    )
    title: Text = Field("", max_length=300)
    rules: Text = Field("", max_length=50_000, description="Rules the answer must follow")
    plan: Plan | None = Field(
        None, description="Omit for a single agent; kind defaults to 'team' when nodes are given"
    )
    validation_policy: Literal["always", "never", "keywords"] = "always"
    validation_keywords: list[Text] = Field(default_factory=list, max_length=100)
    agent: Literal["internal", "external"] = Field(
        "internal",
        description="'external': no job runs the task; your agent submits its attempts to "
        "POST /tasks/{id}/attempts (docs/external-agents.md)",
    )
    audit_rate: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Share of this task's auto-accepted answers drawn for a blind audit; "
        "null: the AUDIT_RATE setting",
    )
    audit_reject_rate: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Share of its auto-rejected answers drawn for an audit; null: "
        "AUDIT_REJECT_RATE",
    )
    audit_rate_reason: str = Field(
        "",
        max_length=2000,
        description="Operators only: why a rate is below the deployment's floor (recorded). "
        "Anyone may raise a rate above the floor; a requester below it gets a 422 naming "
        "the field",
    )
    second_model: str = Field(
        "",
        max_length=200,
        description="A second validator model for this task: '' uses VALIDATOR_SECOND_MODEL, "
        "'none' turns the second judge off; any other name must resolve (else 422)",
        json_schema_extra={"pattern": SECOND_MODEL_NAME},
    )

    _request_not_blank = field_validator("request")(not_blank)

    @field_validator("plan", mode="before")
    @classmethod
    def _default_kind(cls, value: Any) -> Any:
        # Same defaulting as tasks_app.runtime.agents.plans.parse_plan: {} is a single agent.
        if isinstance(value, dict) and "kind" not in value:
            return {**value, "kind": "team" if "nodes" in value else "single"}
        return value


class FeedbackIn(Schema):
    model_config = ConfigDict(
        extra="forbid",
        # The rule the endpoint enforces, stated in the schema: a revision needs a
        # comment that is not blank.
        json_schema_extra={
            "if": {"properties": {"action": {"const": "revise"}}, "required": ["action"]},
            "then": {"properties": {"comment": {"pattern": NOT_BLANK}}, "required": ["comment"]},
        },
    )

    action: Literal["satisfied", "revise", "abandon"]
    comment: Text = Field("", max_length=20_000, description="Required (not blank) for 'revise'")
    expected_version: int | None = Field(
        None, ge=0, description="The task version you saw; a changed task answers 409"
    )
    undo_seconds: int | None = Field(
        0,
        ge=0,
        le=3600,
        description="How long the decision can be undone before it applies (answered as "
        "pending_decision); 0 or null, the default, applies it at once (the review pages "
        "keep their DECISION_UNDO_SECONDS window)",
    )
    force: JsonBool = Field(False, description="Act even though someone else holds the claim")
    claims: list[ClaimLabelIn] = Field(
        default_factory=list,
        max_length=1000,
        description="Your verdict on claims of the validation you decided on, stored with "
        "the decision in one transaction: a refused label (422) refuses the decision too",
    )
    validation_id: int | None = Field(
        None,
        ge=1,
        le=MAX_ID,
        description="With claims: the validation whose claims you labelled; when the "
        "task's latest is another one, 409 and nothing is applied",
    )

    _json_integers = field_validator("expected_version", "validation_id", mode="before")(
        json_integer
    )


class ValidationSummaryOut(Schema):
    """The latest verdict as shown in task lists (no big columns)."""

    id: int
    attempt_index: int
    status: str
    passed: bool
    score: float | None
    failure_category: str | None
    model_status: str | None = Field(
        description=(
            "The model's own status before citation checks; null for verdicts stored before "
            "it was kept"
        )
    )
    claim_summary: ClaimSummaryOut
    created_at: datetime


class VerdictOut(ValidationSummaryOut):
    """The latest verdict on a task, with what a person needs to decide."""

    issues: list[Any]
    missing_requirements: list[Any]
    evidence_gaps: list[Any]
    recommended_revision_prompt: str | None
    reasoning: str
    claims: list[ClaimVerdictOut]
    requirements: list[RequirementOut]
    reconciliation: list[str]
    model: str
    template_version: str


class ClaimOut(Schema):
    claimed_by: str
    claimed_at: datetime
    expires_at: datetime
    is_live: bool

    @staticmethod
    def resolve_claimed_by(task: Task) -> str:
        return task.claimed_by.get_username() if task.claimed_by else ""

    @staticmethod
    def resolve_expires_at(task: Task) -> datetime | None:
        if task.claimed_at is None:
            return None
        return task.claimed_at + timedelta(seconds=settings.REVIEW_CLAIM_TIMEOUT_SECONDS)

    @staticmethod
    def resolve_is_live(task: Task) -> bool:
        return task.claim_is_live()


class AttemptOut(Schema):
    attempt_index: int
    run_ids: list[int]
    validation_id: int | None
    validation_status: str | None


class RevisionValidatorOut(Schema):
    id: int
    attempt_index: int
    status: str
    passed: bool
    score: float | None
    failure_category: str | None
    issues: list[Any]
    missing_requirements: list[Any]
    evidence_gaps: list[Any]
    recommended_revision_prompt: str | None
    reasoning: str


class RevisionOut(Schema):
    """Why a task needs a revision: what an external agent works from."""

    attempt_index: int
    next_attempt_index: int
    requested_by: Literal["validator", "person"]
    person: str | None
    comment: str | None
    validator: RevisionValidatorOut | None
    previous_answer: str


class DecisionOut(Schema):
    """A person's decision on the task: with its comment (a satisfied remark,
    an abandon reason, a revision request)."""

    id: int
    action: Literal["satisfied", "revise", "abandon"]
    comment: str
    author: str | None
    attempt_index: int
    created_at: datetime

    @staticmethod
    def resolve_author(feedback: Feedback) -> str | None:
        return feedback.author.get_username() if feedback.author else None


class PendingDecisionOut(DecisionOut):
    """A decision waiting in its undo window: nothing follows from it (status,
    next attempt, webhooks) until ``applies_at``; POST ``undo_url`` before then."""

    applies_at: datetime
    seconds_left: int = Field(description="Seconds until it applies, when this was answered")
    undo_url: str = Field(description="POST here (no body) before applies_at to undo it")

    @staticmethod
    def resolve_seconds_left(feedback: Feedback) -> int:
        return feedback.seconds_left()

    @staticmethod
    def resolve_undo_url(feedback: Feedback) -> str:
        return f"/api/v1/tasks/{feedback.task_id}/feedback/{feedback.pk}/undo"


class TaskListItemOut(Schema):
    id: int
    title: str
    owner: str
    status: TaskStatus
    status_reason: str = Field(
        description="Why the task is in its status, in one line a person reads (e.g. "
        "'validator: accepted (score 0.90), below the certified threshold 0.95: a person "
        "decides', 'judges disagree: …'): the reason of the change that moved it there, "
        "or what the status means when that change gave none"
    )
    is_open: bool
    is_execution_active: bool
    requires_user_action: bool
    validation_outcome: Literal["accepted", "force_accepted"] | None
    validation_policy: str
    agent: Literal["internal", "external"]
    attempt_count: int
    max_attempts: int
    # Infrastructure re-runs (a worker died): not attempts, capped on their own.
    rerun_count: int = Field(
        description="Times an attempt was run again because its worker died (not attempts)."
    )
    version: int
    claimed_by: str | None
    latest_validation: ValidationSummaryOut | None
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_owner(task: Task) -> str:
        return task.owner.get_username()

    @staticmethod
    def resolve_rerun_count(task: Task) -> int:
        return task.requeue_count

    @staticmethod
    def resolve_validation_outcome(task: Task) -> str | None:
        return task.validation_outcome or None

    @staticmethod
    def resolve_claimed_by(task: Task) -> str | None:
        return task.claimed_by.get_username() if task.claimed_by else None

    @staticmethod
    def resolve_latest_validation(task: Task) -> dict[str, Any] | None:
        # Lists attach it to each task (tasks_app.api.tasks._tasks_listed).
        return verdict_fields().list_summary(task)


class CostOut(Schema):
    amount: str | None = Field(
        description="Decimal string; null when no part could be priced (cost unknown)"
    )
    currency: str
    complete: bool = Field(description="false when some parts are unpriced: a lower bound")
    priced_parts: int
    unknown_parts: int


class AttemptCostOut(Schema):
    attempt_index: int
    agent: CostOut
    validation: CostOut
    second_judge: CostOut = Field(description="The second judge's verdicts on this attempt")
    total: CostOut


class TaskCostOut(Schema):
    total: CostOut
    attempts: list[AttemptCostOut]
    replays: CostOut


class TaskOut(TaskListItemOut):
    request: str
    rules: str
    plan: dict[str, Any]
    validation_keywords: list[Any]
    final_answer: str
    second_model: str = Field(
        "", description="The task's second validator model ('' : the setting; 'none': off)"
    )
    latest_validation: VerdictOut | None
    attempts: list[AttemptOut]
    claim: ClaimOut | None
    cost: TaskCostOut | None = Field(
        None,
        description="What the task cost in money (agent runs, validations, replays), priced "
        "with genai-prices when each request was made; reviewers and operators only "
        "(null for requesters)",
    )
    revision: RevisionOut | None = Field(
        None,
        description="In needs_revision: the validator's feedback and the person's comment "
        "the next attempt should address",
    )
    pending_decision: PendingDecisionOut | None = Field(
        None,
        description="A decision still in its undo window: the task's status does not count it yet",
    )
    last_decision: DecisionOut | None = Field(
        None, description="The latest decision that applied, with its comment"
    )
    audit_rate: float | None = Field(
        None, description="The task's own audit rate of auto-accepts (null: the setting)"
    )
    audit_reject_rate: float | None = Field(
        None, description="The task's own audit rate of auto-rejects (null: the setting)"
    )

    @staticmethod
    def resolve_second_model(task: Task) -> str:
        return str(task_settings().settings_of(task).get("second_model", ""))

    @staticmethod
    def resolve_audit_rate(task: Task) -> float | None:
        return task_settings().settings_of(task).get("audit_rate")

    @staticmethod
    def resolve_audit_reject_rate(task: Task) -> float | None:
        return task_settings().settings_of(task).get("audit_reject_rate")

    @staticmethod
    def resolve_plan(task: Task) -> dict[str, Any]:
        return task.plan if isinstance(task.plan, dict) else {}

    @staticmethod
    def resolve_validation_keywords(task: Task) -> list[Any]:
        return as_list(task.validation_keywords)

    @staticmethod
    def resolve_latest_validation(task: Task) -> dict[str, Any] | None:
        return verdict_fields().verdict_detail(task.pk)

    @staticmethod
    def resolve_attempts(task: Task) -> list[dict[str, Any]]:
        return attempt_summaries(task)

    @staticmethod
    def resolve_cost(task: Task, context: dict[str, Any]) -> dict[str, Any] | None:
        request = context.get("request")
        user = getattr(request, "auth", None) or getattr(request, "user", None)
        if user is None or not is_staff_role(user):
            return None
        return verdict_fields().cost(task)

    @staticmethod
    def resolve_claim(task: Task) -> Task | None:
        return task if task.claimed_by_id and task.claimed_at else None

    @staticmethod
    def resolve_pending_decision(task: Task) -> Feedback | None:
        return pending_decision_on(task.pk)

    @staticmethod
    def resolve_last_decision(task: Task) -> Feedback | None:
        return last_decision_on(task.pk)

    @staticmethod
    def resolve_revision(task: Task) -> dict[str, Any] | None:

        return revision_feedback(task)


class TaskListOut(Schema):
    items: list[TaskListItemOut]
    count: int
    next: str | None = Field(
        None,
        description="URL of the next page by cursor (keyset: stable while tasks are "
        "added, as fast deep as on the first page); null on the last page",
    )


TaskOrdering = Literal["created_at", "-created_at", "updated_at", "-updated_at", "id", "-id"]


class TaskOrderingQuery(Schema):
    ordering: TaskOrdering = "-created_at"


class TaskFilter(FilterSchema):
    """The list filters of GET /tasks; the flags are derived from the task's status."""

    status: list[TaskStatus] | None = Field(None, description="Repeatable: ?status=a&status=b")
    requires_user_action: bool | None = None
    is_open: bool | None = None
    is_execution_active: bool | None = None
    q: Text | None = Field(None, max_length=500, description="Text in title or request")
    agent: Literal["internal", "external"] | None = Field(
        None, description="Only tasks run by this kind of agent (external: your own)"
    )

    def filter_status(self, value: list[TaskStatus] | None) -> Q:
        return Q(status__in=[str(s) for s in value]) if value else Q()

    def filter_requires_user_action(self, value: bool | None) -> Q:
        return _flag(value, states.USER_ACTION_STATUSES)

    def filter_is_open(self, value: bool | None) -> Q:
        return _flag(value, states.OPEN_STATUSES)

    def filter_is_execution_active(self, value: bool | None) -> Q:
        return _flag(value, states.EXECUTION_ACTIVE_STATUSES)

    def filter_q(self, value: str | None) -> Q:
        text = (value or "").strip()
        return Q(title__icontains=text) | Q(request__icontains=text) if text else Q()

    def filter_agent(self, value: str | None) -> Q:
        return Q(agent=value) if value else Q()


def _flag(value: bool | None, statuses: Any) -> Q:
    if value is None:
        return Q()
    return Q(status__in=statuses) if value else ~Q(status__in=statuses)


class ForceQuery(Schema):
    force: bool = Field(False, description="Take over or release someone else's live claim")


EventKind = Literal["transition", "claimed", "taken_over", "released"]


class EventOut(Schema):
    """A status change (``kind`` "transition") or a review claim changing hands; a
    claim event keeps the status, so its from_status equals to_status.
    Ids are unique per group: status changes and claim events are numbered apart."""

    id: int
    kind: EventKind = Field(
        "transition",
        description="transition: a status change; claimed, taken_over, released: a claim",
    )
    from_status: str
    to_status: str
    actor: str | None
    actor_kind: str
    previous_holder: str | None = Field(
        None, description="Who held the claim before a claim event (null: nobody)"
    )
    reason: str
    attempt_index: int
    at: datetime

    @staticmethod
    def resolve_kind(event: Any) -> str:
        return event.kind if isinstance(event, ClaimEvent) else "transition"

    @staticmethod
    def resolve_from_status(event: Any) -> str:
        return event.task_status if isinstance(event, ClaimEvent) else event.from_status

    @staticmethod
    def resolve_to_status(event: Any) -> str:
        return event.task_status if isinstance(event, ClaimEvent) else event.to_status

    @staticmethod
    def resolve_actor(event: Any) -> str | None:
        return event.actor.get_username() if event.actor_id else None

    @staticmethod
    def resolve_previous_holder(event: Any) -> str | None:
        holder = event.previous_holder if isinstance(event, ClaimEvent) else None
        return holder.get_username() if holder is not None else None


class EventListOut(Schema):
    items: list[EventOut]
    count: int


class MeOut(Schema):
    username: str
    is_reviewer: bool
    is_operator: bool
