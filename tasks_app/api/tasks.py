"""Tasks API: create, list, read, feedback, claims, events.

Endpoints read through querysets and write only through ``tasks_app.workflow.services``; none
assigns ``status``. Each write and the reads that build its response share one
transaction, so an error after the write leaves nothing behind and queues no job.
Object permissions come from ``tasks_app.workflow.selectors``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, JsonResponse
from ninja import Query, Router
from ninja.errors import AuthorizationError, ValidationError

from project import roles
from project.idempotency import idempotency_header, run_idempotent
from project.pagination import LimitOffsetCursor, paginate
from project.roles import require_reviewer
from project.schemas import error_responses
from tasks_app.api.schemas import (
    EventListOut,
    FeedbackIn,
    ForceQuery,
    MeOut,
    TaskCreateIn,
    TaskFilter,
    TaskListOut,
    TaskOrderingQuery,
    TaskOut,
)
from tasks_app.api.verdict_fields import verdict_fields
from tasks_app.workflow import services
from tasks_app.workflow.models import Feedback, Task, TaskQuerySet
from tasks_app.workflow.selectors import (
    count_of,
    get_visible_task,
    may_decide,
    require_visible_task,
    status_counts,
    task_history,
    tasks_for_list,
    visible_tasks,
)
from tasks_app.workflow.signals import task_seen_by

router = Router(tags=["tasks"])


def require_can_decide(user: Any, task_id: int) -> None:
    """Decisions on a task belong to its requester and to reviewers, as in the UI."""
    if not may_decide(user, task_id):
        raise AuthorizationError(
            message="Only the requester or a reviewer can decide on this task."
        )


@router.get("/me", response={200: MeOut, **error_responses()}, summary="Who am I")
def me(request: HttpRequest) -> dict[str, Any]:
    user = request.auth  # type: ignore[attr-defined]
    return {
        "username": user.get_username(),
        "is_reviewer": roles.is_reviewer(user),
        "is_operator": roles.is_operator(user),
    }


@router.post(
    "/tasks",
    response={201: TaskOut, **error_responses(409)},
    summary="Create a task; its first attempt is queued",
)
def create_task(
    request: HttpRequest,
    payload: TaskCreateIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    user = request.auth  # type: ignore[attr-defined]

    def work() -> tuple[int, Any]:
        with transaction.atomic():
            task = services.task_create(
                owner=user,
                request=payload.request,
                title=payload.title,
                rules=payload.rules,
                plan=payload.plan.model_dump(mode="json") if payload.plan else None,
                validation_policy=payload.validation_policy,
                validation_keywords=payload.validation_keywords,
                agent=payload.agent,
                audit_rate=payload.audit_rate,
                audit_reject_rate=payload.audit_reject_rate,
                audit_rate_reason=payload.audit_rate_reason,
                second_model=payload.second_model,
            )
            return 201, TaskOut.model_validate(get_visible_task(user, task.pk)).model_dump(
                mode="json"
            )

    return run_idempotent(request, endpoint="POST /tasks", key=idempotency_key, work=work)


def _tasks_listed(tasks: TaskQuerySet, *, ordering: str) -> TaskQuerySet:
    """Tasks for a list page, in a constant number of queries whatever its size: the
    rows without their big columns, and each one's latest original verdict summary
    (``TaskListItemOut.latest_validation``)."""
    return verdict_fields().with_list_summaries(tasks_for_list(tasks, ordering=ordering))


@router.get(
    "/tasks",
    response={200: TaskListOut, **error_responses(404)},
    summary="List tasks (filters, ordering, limit/offset or cursor)",
)
@paginate(LimitOffsetCursor)
def get_tasks(
    request: HttpRequest, filters: Query[TaskFilter], query: Query[TaskOrderingQuery]
) -> QuerySet[Task]:
    tasks = filters.filter(visible_tasks(request.auth))  # type: ignore[attr-defined]
    # Each row has the task's status and outcome: every task the filters select counts
    # as read by the caller (audits of those tasks they judge later are not blind).
    task_seen_by(request.auth, tasks, "GET /api/v1/tasks")  # type: ignore[attr-defined]
    listed = _tasks_listed(tasks, ordering=query.ordering)
    listed.page_by_ids = True  # type: ignore[attr-defined]
    only_status = (
        filters.requires_user_action is None
        and filters.is_open is None
        and filters.is_execution_active is None
        and not (filters.q or "").strip()
        and filters.agent is None
    )
    if only_status and roles.is_staff_role(request.auth):  # type: ignore[attr-defined]
        # Every task (or every task in some statuses): the counters know the total, so
        # the page costs no scan of the table.
        statuses = [str(s) for s in filters.status] if filters.status else None
        listed.known_count = count_of(status_counts(), statuses)  # type: ignore[attr-defined]
    return listed


@router.get(
    "/tasks/active",
    response={200: TaskListOut, **error_responses(404)},
    summary="Open tasks (not terminal; includes needs_review)",
)
@paginate(LimitOffsetCursor)
def get_active_tasks(request: HttpRequest, query: Query[TaskOrderingQuery]) -> QuerySet[Task]:
    tasks = visible_tasks(request.auth).open()  # type: ignore[attr-defined]
    task_seen_by(request.auth, tasks, "GET /api/v1/tasks/active")  # type: ignore[attr-defined]
    listed = _tasks_listed(tasks, ordering=query.ordering)
    listed.page_by_ids = True  # type: ignore[attr-defined]
    return listed


@router.get(
    "/tasks/{task_id}",
    response={200: TaskOut, **error_responses(404)},
    summary="One task: flags, outcome, attempts, answer, latest verdict, claim",
)
def get_task(request: HttpRequest, task_id: int) -> Task:
    return get_visible_task(
        request.auth,  # type: ignore[attr-defined]
        task_id,
        channel=f"GET /api/v1/tasks/{task_id}",
    )


@router.post(
    "/tasks/{task_id}/feedback",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="satisfied / revise (comment required) / abandon; undoable until it applies",
    description="The decision applies at once (the answer is the task in its new status) "
    "unless you ask for an undo window with `undo_seconds`: then the answer's "
    "`pending_decision` says when it applies (`applies_at`) and where to undo it "
    "(`undo_url`), and until then the task's status, its webhooks and the agreement figures "
    "do not count it. An optional `comment` goes with satisfied and abandon (a reason) too. "
    "`claims` (optional) are your verdicts on the claims of the validation you decided on, "
    "stored with the decision: a refused label (422: an unknown claim index or label, "
    "another task's evidence) or a `validation_id` that is not the task's latest (409) "
    "refuses the decision too, and nothing is written.",
)
def give_feedback(
    request: HttpRequest,
    task_id: int,
    payload: FeedbackIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_can_decide(user, task_id)
    if payload.action == "revise" and not payload.comment.strip():
        raise ValidationError(
            [
                {
                    "loc": ("body", "payload", "comment"),
                    "msg": "a revision needs a comment saying what to change",
                    "type": "missing",
                }
            ]
        )

    def work() -> tuple[int, Any]:
        with transaction.atomic():
            services.task_decide(
                task_id=task_id,
                actor=user,
                action=payload.action,
                comment=payload.comment,
                expected_version=payload.expected_version,
                force=payload.force,
                undo_seconds=payload.undo_seconds or 0,
                claim_labels=[entry.model_dump(exclude_none=True) for entry in payload.claims],
                validation_id=payload.validation_id,
            )
            return 200, TaskOut.model_validate(get_visible_task(user, task_id)).model_dump()

    return run_idempotent(
        request, endpoint=f"POST /tasks/{task_id}/feedback", key=idempotency_key, work=work
    )


@router.post(
    "/tasks/{task_id}/feedback/{feedback_id}/undo",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="Undo a decision before it applies (its author, or a reviewer)",
    description="Inside the undo window the decision is marked undone and nothing it would "
    "have caused happens; the timeline records who undid it. After `applies_at`: 409.",
)
def undo_feedback(request: HttpRequest, task_id: int, feedback_id: int) -> Task:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    with transaction.atomic():
        try:
            services.decision_undo(feedback_id=feedback_id, task_id=task_id, actor=user)
        except Feedback.DoesNotExist:
            raise Http404(f"Task {task_id} has no decision {feedback_id}.") from None
        return get_visible_task(user, task_id)


@router.post(
    "/tasks/{task_id}/claim",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="Claim a task for review (reviewers); ?force=true takes over",
)
def claim_task(request: HttpRequest, task_id: int, query: Query[ForceQuery]) -> Task:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_reviewer(user)
    with transaction.atomic():
        services.task_claim(task_id=task_id, reviewer=user, force=query.force)
        return get_visible_task(user, task_id)


@router.delete(
    "/tasks/{task_id}/claim",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="Release a claim (reviewers); ?force=true releases someone else's",
)
def release_claim(request: HttpRequest, task_id: int, query: Query[ForceQuery]) -> Task:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_reviewer(user)
    with transaction.atomic():
        services.task_release_claim(task_id=task_id, reviewer=user, force=query.force)
        return get_visible_task(user, task_id)


@router.get(
    "/tasks/{task_id}/events",
    response={200: EventListOut, **error_responses(404)},
    summary="The task's state changes and claim events, oldest first",
)
def get_task_events(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(
        request.auth,  # type: ignore[attr-defined]
        task_id,
        channel=f"GET /api/v1/tasks/{task_id}/events",
    )
    events = task_history(task_id)
    return {"items": events, "count": len(events)}
