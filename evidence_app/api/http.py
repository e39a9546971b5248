"""The HTTP helpers of evidence_app's API, its own (no HTTP helper crosses the seam
between the apps): the 403 of a decision by someone who may not decide on the task (the
rule is tasks_app's: ``tasks_app.records.may_decide``). Idempotent writes are
``project.idempotency``'s (``run_idempotent``), as for every app's API."""

from __future__ import annotations

from typing import Any

from ninja.errors import AuthorizationError

from tasks_app.records import may_decide

__all__ = ["require_can_decide"]


def require_can_decide(user: Any, task_id: int) -> None:
    """Decisions on a task belong to its requester and to reviewers, as in the UI."""
    if not may_decide(user, task_id):
        raise AuthorizationError(
            message="Only the requester or a reviewer can decide on this task."
        )
