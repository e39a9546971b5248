"""What other apps may do to a task, and the hand-offs they register: transitions,
decisions, claims and notes; jobs queued through the outbox; the validation claim; the
validator hand-off (``register_validator``, ``Verdict``) and the tasks API's verdict
fields (``register_verdict_fields``); the webhook events another app registers and sends
(``register_webhook_events``, ``webhook_events_for_task``, ``webhook_events_for_operators``:
evidence_app's audit and auto-accept events); a team plan's check;
the knowledge base's import; an external agent's attempt (the demo submits one); the
checks of a new task's fields and what is stored beside it (``register_creation_check``:
the audit settings), and who reads those settings for the tasks API
(``register_task_settings``).

evidence_app imports tasks_app only through this module and ``tasks_app.records`` (an
import contract in pyproject.toml holds it)."""

from __future__ import annotations

from tasks_app.api.verdict_fields import register_verdict_fields
from tasks_app.intake.external import external_attempt_submit
from tasks_app.intake.external_input import AttemptIn
from tasks_app.knowledge.importer import import_folder
from tasks_app.notifications.event_names import RegisteredEvent, register_webhook_events
from tasks_app.notifications.webhooks import webhook_events_for_operators, webhook_events_for_task
from tasks_app.runtime.agents.plans import parse_plan
from tasks_app.workflow.creation_checks import register_creation_check
from tasks_app.workflow.services import (
    FEEDBACK_TARGETS,
    attempt_enqueue,
    decision_undo,
    job_enqueue,
    job_send_on_commit,
    new_job_id,
    review_visit_record,
    task_add_note,
    task_assign,
    task_claim,
    task_create,
    task_decide,
    task_release_claim,
    validation_enqueue,
)
from tasks_app.workflow.task_settings import register_task_settings
from tasks_app.workflow.transitions import Transition, task_transition
from tasks_app.workflow.validation_claims import (
    ClaimKeeper,
    validation_claim_and_read,
    validation_claim_release,
)
from tasks_app.workflow.verdicts import Verdict, register_validator

__all__ = [
    "AttemptIn",
    "RegisteredEvent",
    "Transition",
    "ClaimKeeper",
    "FEEDBACK_TARGETS",
    "Verdict",
    "attempt_enqueue",
    "decision_undo",
    "external_attempt_submit",
    "import_folder",
    "job_enqueue",
    "job_send_on_commit",
    "new_job_id",
    "parse_plan",
    "register_creation_check",
    "register_task_settings",
    "register_validator",
    "register_webhook_events",
    "register_verdict_fields",
    "review_visit_record",
    "task_add_note",
    "task_assign",
    "task_claim",
    "task_create",
    "task_decide",
    "task_release_claim",
    "task_transition",
    "validation_claim_and_read",
    "validation_claim_release",
    "validation_enqueue",
    "webhook_events_for_operators",
    "webhook_events_for_task",
]
