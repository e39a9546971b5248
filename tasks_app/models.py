"""The app's models, each defined in the package of the capability that owns it
(workflow, runtime, intake, notifications, knowledge, accounts, api); Django finds them
here, and code outside ``tasks_app`` imports them from here."""

from __future__ import annotations

from tasks_app.accounts.models import ApiToken, hash_token
from tasks_app.api.models import IdempotencyKey
from tasks_app.intake.models import OtlpSpan, OtlpTrace, OtlpTraceState
from tasks_app.knowledge.models import KnowledgeDocument, KnowledgeDocumentQuerySet
from tasks_app.notifications.models import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookEndpoint,
    WebhookEvent,
)
from tasks_app.runtime.models import (
    RUN_ABANDONED_BY_DEAD_WORKER,
    RUN_LEASE_EXPIRED,
    RUN_TAKEN_OVER,
    LLMRequestSnapshot,
    Run,
    RunKind,
    RunMessage,
    RunStatus,
    ServiceHeartbeat,
    ToolEvidence,
    ToolEvidenceQuerySet,
    content_digest,
)
from tasks_app.workflow.models import (
    NO_USABLE_ANSWER,
    STATUS_COUNT_SHARDS,
    TASK_BIG_FIELDS,
    ClaimEvent,
    ClaimEventKind,
    DecisionState,
    Feedback,
    FeedbackAction,
    FeedbackQuerySet,
    OutboxJob,
    OutboxJobQuerySet,
    ReviewVisit,
    Task,
    TaskAgent,
    TaskEvent,
    TaskQuerySet,
    TaskStatusCount,
    ValidationOutcome,
    ValidationPolicy,
)
from tasks_app.workflow.states import TaskStatus

__all__ = [
    "ApiToken",
    "ClaimEvent",
    "ClaimEventKind",
    "DecisionState",
    "DeliveryStatus",
    "Feedback",
    "FeedbackAction",
    "FeedbackQuerySet",
    "IdempotencyKey",
    "KnowledgeDocument",
    "KnowledgeDocumentQuerySet",
    "LLMRequestSnapshot",
    "NO_USABLE_ANSWER",
    "OtlpSpan",
    "OtlpTrace",
    "OtlpTraceState",
    "OutboxJob",
    "OutboxJobQuerySet",
    "RUN_ABANDONED_BY_DEAD_WORKER",
    "RUN_LEASE_EXPIRED",
    "RUN_TAKEN_OVER",
    "Run",
    "RunKind",
    "RunMessage",
    "RunStatus",
    "ReviewVisit",
    "STATUS_COUNT_SHARDS",
    "ServiceHeartbeat",
    "TASK_BIG_FIELDS",
    "Task",
    "TaskAgent",
    "TaskEvent",
    "TaskQuerySet",
    "TaskStatus",
    "TaskStatusCount",
    "ToolEvidence",
    "ToolEvidenceQuerySet",
    "ValidationOutcome",
    "ValidationPolicy",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookEndpoint",
    "WebhookEvent",
    "content_digest",
    "hash_token",
]
