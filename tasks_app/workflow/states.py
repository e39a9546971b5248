"""Task statuses and the one transition table (S1–S3).

Nothing else in the code base decides which status may follow which: the service
``tasks_app.workflow.transitions.task_transition`` consults ``TRANSITIONS`` and nothing else.
"""

from __future__ import annotations

from django.db import models


class TaskStatus(models.TextChoices):
    OPEN = "open", "Open"
    RUNNING = "running", "Running"
    VALIDATING = "validating", "Validating"
    AWAITING_FEEDBACK = "awaiting_feedback", "Awaiting feedback"
    NEEDS_REVIEW = "needs_review", "Needs review"
    NEEDS_REVISION = "needs_revision", "Needs revision"
    FAILED = "failed", "Failed"
    CLOSED = "closed", "Closed"
    ABANDONED = "abandoned", "Abandoned"


S = TaskStatus

TERMINAL_STATUSES = frozenset({S.FAILED, S.CLOSED, S.ABANDONED})
EXECUTION_ACTIVE_STATUSES = frozenset({S.RUNNING, S.VALIDATING})
USER_ACTION_STATUSES = frozenset({S.AWAITING_FEEDBACK, S.NEEDS_REVIEW})
# "Open" means the task can still take feedback or a revision; it does not mean the
# scheduler may run it: needs_review is open but never auto-runnable.
OPEN_STATUSES = frozenset(set(S) - TERMINAL_STATUSES)
# Statuses from which a scheduler, retry or poller may start an attempt.
RUNNABLE_STATUSES = frozenset({S.OPEN, S.NEEDS_REVISION})

TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    # An attempt starts; or the requester gives up before it did.
    S.OPEN: frozenset({S.RUNNING, S.ABANDONED}),
    # The attempt produced an answer (validating), none (failed), or was re-queued by
    # the reaper after its worker died (open). running -> running: a redelivered job
    # takes over the same attempt whose lease expired, under a new lease.
    S.RUNNING: frozenset({S.RUNNING, S.VALIDATING, S.FAILED, S.OPEN, S.ABANDONED}),
    # V2: accepted, doubtful or validator error, rejected with attempts left, or
    # rejected on the last attempt with no usable answer.
    S.VALIDATING: frozenset(
        {S.AWAITING_FEEDBACK, S.NEEDS_REVIEW, S.NEEDS_REVISION, S.FAILED, S.ABANDONED}
    ),
    # S5: user feedback is authoritative.
    S.AWAITING_FEEDBACK: frozenset({S.CLOSED, S.NEEDS_REVISION, S.ABANDONED}),
    S.NEEDS_REVIEW: frozenset({S.CLOSED, S.NEEDS_REVISION, S.ABANDONED}),
    # A new attempt picks up the revision.
    S.NEEDS_REVISION: frozenset({S.RUNNING, S.ABANDONED}),
    S.FAILED: frozenset(),
    S.CLOSED: frozenset(),
    S.ABANDONED: frozenset(),
}


def is_open(status: str) -> bool:
    return status in OPEN_STATUSES


def is_execution_active(status: str) -> bool:
    return status in EXECUTION_ACTIVE_STATUSES


def requires_user_action(status: str) -> bool:
    return status in USER_ACTION_STATUSES


def can_transition(from_status: str, to_status: str) -> bool:
    return to_status in TRANSITIONS.get(TaskStatus(from_status), frozenset())
