"""Runs and their transcripts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from django.http import HttpRequest
from ninja import Router
from ninja.errors import HttpError

from project import roles
from project.pagination import LimitOffset200, paginate
from project.schemas import error_responses
from tasks_app.api.run_schemas import RunListOut, RunMessageListOut
from tasks_app.runtime.models import Run, RunMessage
from tasks_app.runtime.selectors import get_visible_run
from tasks_app.workflow.selectors import require_visible_task

router = Router(tags=["tasks"])


@router.get(
    "/tasks/{task_id}/runs",
    response={200: RunListOut, **error_responses(404)},
    summary="The task's agent runs (all attempts, graph order)",
)
def get_task_runs(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(request.auth, task_id)  # type: ignore[attr-defined]
    runs = list(Run.objects.filter(task_id=task_id).annotate(evidence_count=Count("tool_evidence")))
    return {"items": runs, "count": len(runs)}


@router.get(
    "/runs/{run_id}/messages",
    response={200: RunMessageListOut, **error_responses(403, 404)},
    summary="A run's transcript, in order (reviewers and operators)",
    description="Transcripts are reviewers' and operators' material, as on the pages (the "
    "trace view): a requester is answered 403 for a run of their own task, 404 for any other.",
)
@paginate(LimitOffset200)
def get_run_messages(request: HttpRequest, run_id: int) -> QuerySet[RunMessage]:
    user = request.auth  # type: ignore[attr-defined]
    run = get_visible_run(user, run_id)
    if not roles.is_staff_role(user):
        raise HttpError(403, "A run's transcript is for reviewers and operators.")
    return run.messages.order_by("index")
