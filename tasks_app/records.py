"""What tasks_app keeps, as other apps read it: the task and its states, runs, tool
evidence, decisions, events and OTLP traces, and who may see or act on a task.

evidence_app imports tasks_app only through this module and ``tasks_app.actions`` (an
import contract in pyproject.toml and tests/architecture/test_seam.py hold it); what is
not named here is tasks_app's own.

The contract (issue 45). evidence_app writes to tasks_app only through
``tasks_app.actions``; it reads through the selectors below (``can_act``, ``may_decide``,
``count_of``, ``status_counts``, ``visible_task``, ``require_visible_task``,
``get_visible_run``, ``review_queue_entries``, ``review_queue_age_summary``), the
querysets' named filters, and these models' fields, no others, and never with SQL of its
own on tasks_app's tables. Renaming or removing one of these fields is a change of this
contract: say so here (tests/architecture/test_seam.py fails when a field named here is
gone).

- ``Task``: id, owner, title, request, rules, plan, validation_policy,
  validation_keywords, agent, status, version, attempt_count, max_attempts,
  final_answer, validation_outcome, claimed_by, claimed_at, assigned_to, requeue_count,
  job_id, created_at, updated_at
- ``TaskEvent``: id, task, from_status, to_status, actor, actor_kind, reason,
  attempt_index, at
- ``ClaimEvent``: id, task, kind, actor, actor_kind, previous_holder, attempt_index,
  reason, at
- ``Feedback``: id, task, author, action, comment, attempt_index, validator_status,
  created_at, state, applies_at, undone_by, undone_at
- ``ReviewVisit``: id, task, attempt_index, reviewer, first_viewed_at
- ``TaskStatusCount``: status, n
- ``Run``: id, task, attempt_index, kind, node_id, node_role, graph_index, session_id,
  model_name, status, finish_reason, output_text, usage, input_tokens, output_tokens,
  cost, cost_currency, tool_iterations, started_at, finished_at, duration_ms, error,
  warnings, payload
- ``RunMessage``: id, run, index, role, content, payload, created_at
- ``LLMRequestSnapshot``: id, run, iteration, provider, model_name, message_count,
  tool_names, message_chars, tool_schema_chars, max_tokens, temperature, thinking,
  latency_ms, input_tokens, output_tokens, cost, cost_currency, full_request, created_at
- ``ToolEvidence``: id, run, task, attempt_index, sequence, tool_name, tool_call_id,
  arguments, content, content_chars, content_sha256, is_error, url, title,
  event_payload, created_at
- ``OtlpTrace``: id, trace_id, owner, task, attempt_index, state, final, span_count,
  late_span_count, first_span_at, error

The choices (``TaskStatus``, ``FeedbackAction``, ``DecisionState``, ``RunKind``,
``RunStatus``, ``TaskAgent``, ``ValidationPolicy``, ``WebhookEvent``) and the constants
named in ``__all__`` are part of it too."""

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
    may_decide,
    require_visible_task,
    review_queue_age_summary,
    review_queue_entries,
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
    "may_decide",
    "require_visible_task",
    "review_queue_age_summary",
    "review_queue_entries",
    "status_counts",
    "status_reason_words",
    "visible_task",
]
