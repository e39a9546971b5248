"""The HTTP helpers of evidence_app's API, its own (issue 45: no HTTP helper crosses the
seam between the apps): a write run at most once per ``Idempotency-Key``, whose response
tasks_app stores (``tasks_app.actions.idempotent_call``) and ``project.idempotency``
renders, and the 403 of a decision by someone who may not decide on the task (the rule
is tasks_app's: ``tasks_app.records.may_decide``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja.errors import AuthorizationError

from project.idempotency import replayable_response
from tasks_app.actions import idempotent_call
from tasks_app.records import may_decide

__all__ = ["require_can_decide", "run_idempotent"]


def run_idempotent(
    request: HttpRequest,
    *,
    endpoint: str,
    key: str | None,
    work: Callable[[], tuple[int, Any]],
) -> JsonResponse:
    """``work`` (a status and the response's plain data) at most once per
    ``Idempotency-Key``: a retry gets the first response back, marked
    ``Idempotent-Replayed: true``."""
    code, body, replayed = idempotent_call(
        user=request.auth,  # type: ignore[attr-defined]
        endpoint=endpoint,
        key=key,
        body=request.body,
        produce=work,
    )
    return replayable_response(code, body, replayed=replayed)


def require_can_decide(user: Any, task_id: int) -> None:
    """Decisions on a task belong to its requester and to reviewers, as in the UI."""
    if not may_decide(user, task_id):
        raise AuthorizationError(
            message="Only the requester or a reviewer can decide on this task."
        )
