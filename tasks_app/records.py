"""What tasks_app keeps, as other apps read it: the task and its states, runs, tool
evidence, decisions, events and OTLP traces, and who may see or act on a task.

evidence_app imports tasks_app only through this module and ``tasks_app.actions`` (an
import contract in pyproject.toml holds it); what is not named here is tasks_app's own."""

from __future__ import annotations

from tasks_app.models import (
    NO_USABLE_ANSWER,
    RUN_ABANDONED_BY_DEAD_WORKER,
    ClaimEvent,
    DecisionState,
    Feedback,
    FeedbackAction,
    LLMRequestSnapshot,
    OtlpTrace,
    ReviewVisit,
    Run,
    RunKind,
    RunMessage,
    RunStatus,
    Task,
    TaskAgent,
    TaskEvent,
    TaskQuerySet,
    TaskStatusCount,
    ToolEvidence,
    ValidationPolicy,
)
from tasks_app.notifications.models import WebhookEvent
from tasks_app.runtime.selectors import get_visible_run
from tasks_app.workflow.selectors import (
    can_act,
    count_of,
    require_visible_task,
    status_counts,
    visible_task,
)
from tasks_app.workflow.signals import task_seen
from tasks_app.workflow.states import EXECUTION_ACTIVE_STATUSES, RUNNABLE_STATUSES, TaskStatus
from tasks_app.workflow.status_reasons import codes_in_words, status_reason_words

__all__ = [
    "task_seen",
    "ClaimEvent",
    "DecisionState",
    "EXECUTION_ACTIVE_STATUSES",
    "Feedback",
    "FeedbackAction",
    "LLMRequestSnapshot",
    "NO_USABLE_ANSWER",
    "OtlpTrace",
    "RUNNABLE_STATUSES",
    "RUN_ABANDONED_BY_DEAD_WORKER",
    "ReviewVisit",
    "Run",
    "RunKind",
    "RunMessage",
    "RunStatus",
    "Task",
    "TaskAgent",
    "TaskEvent",
    "TaskQuerySet",
    "TaskStatus",
    "TaskStatusCount",
    "ToolEvidence",
    "ValidationPolicy",
    "WebhookEvent",
    "can_act",
    "codes_in_words",
    "count_of",
    "get_visible_run",
    "require_visible_task",
    "status_counts",
    "status_reason_words",
    "visible_task",
]
