"""Tasks API (SPEC A1, A2, S2, S5, U3): create, list, read, feedback, claims, events, runs.

Endpoints read through querysets and write only through ``tasks_app.services``; none
assigns ``status``. Each write and the reads that build its response share one
transaction, so an error after the write leaves nothing behind and queues no job.
Object permissions: requesters see and act on their own tasks only (anyone else's is a
404, so ids do not leak); reviewers and operators see all.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.http import Http404, HttpRequest
from ninja import Query, Router, Status
from ninja.errors import AuthorizationError, ValidationError

from evidence_app.models import ValidationSnapshot
from tasks_app import roles, services, states
from tasks_app.models import KnowledgeDocument, Run, Task, TaskEvent
from tasks_app.schemas import (
    ActiveTaskQuery,
    DocumentIn,
    DocumentListOut,
    DocumentOut,
    DocumentQuery,
    EventListOut,
    FeedbackIn,
    ForceQuery,
    MeOut,
    MessagePageQuery,
    RunListOut,
    RunMessageListOut,
    TaskCreateIn,
    TaskListOut,
    TaskListQuery,
    TaskOut,
    error_responses,
)
from tasks_app.states import TaskStatus

router = Router(tags=["tasks"])

SUMMARY_FIELDS = (
    "id",
    "task_id",
    "attempt_index",
    "status",
    "score",
    "failure_category",
    "created_at",
)


# --- Permissions ------------------------------------------------------------------------


def visible_tasks(user: Any) -> QuerySet[Task]:
    return Task.objects.visible_to(user)


def get_visible_task(user: Any, task_id: int) -> Task:
    """The task if ``user`` may see it; otherwise 404, whether or not it exists (A2)."""
    task = visible_tasks(user).select_related("owner", "claimed_by").filter(pk=task_id).first()
    if task is None:
        raise Http404(f"Task {task_id} not found.")
    return task


def require_visible_task(user: Any, task_id: int) -> int:
    """Like ``get_visible_task`` for endpoints that need only the permission check: it
    reads the id alone, never the task's big text columns."""
    if not visible_tasks(user).filter(pk=task_id).exists():
        raise Http404(f"Task {task_id} not found.")
    return task_id


def get_visible_run(user: Any, run_id: int) -> Run:
    runs = Run.objects.all()
    if not roles.is_staff_role(user):
        runs = runs.filter(task__owner=user)
    run = runs.defer("output_text").filter(pk=run_id).first()
    if run is None:
        raise Http404(f"Run {run_id} not found.")
    return run


def require_operator(user: Any) -> None:
    if not roles.is_operator(user):
        raise AuthorizationError(message="Only operators may do this.")


def require_staff_role(user: Any) -> None:
    if not roles.is_staff_role(user):
        raise AuthorizationError(message="Only reviewers and operators may do this.")


def require_reviewer(user: Any) -> None:
    # The UI's rule too: reviewers claim; operators inspect but do not decide (S5, U3).
    if not roles.is_reviewer(user):
        raise AuthorizationError(message="Only reviewers may claim tasks.")


def require_can_decide(user: Any, task_id: int) -> None:
    """Decisions on a task belong to its requester and to reviewers (S5), as in the UI."""
    if not roles.is_reviewer(user) and not Task.objects.filter(pk=task_id, owner=user).exists():
        raise AuthorizationError(
            message="Only the requester or a reviewer can decide on this task."
        )


# --- Serialisation ----------------------------------------------------------------------


def validation_summary(snapshot: ValidationSnapshot | None) -> dict[str, Any] | None:
    if snapshot is None:
        return None
    return {
        "id": snapshot.pk,
        "attempt_index": snapshot.attempt_index,
        "status": snapshot.status,
        "passed": snapshot.passed,
        "score": snapshot.score,
        "failure_category": snapshot.failure_category or None,
        "created_at": snapshot.created_at,
    }


def verdict(snapshot: ValidationSnapshot | None) -> dict[str, Any] | None:
    """The latest verdict of a task: the V1 fields a person needs to decide (A1)."""
    if snapshot is None:
        return None
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    data = validation_summary(snapshot) or {}
    data.update(
        issues=as_list(result.get("issues")),
        missing_requirements=as_list(result.get("missing_requirements")),
        evidence_gaps=as_list(result.get("evidence_gaps")),
        recommended_revision_prompt=_as_text_or_none(result.get("recommended_revision_prompt")),
        reasoning=_as_text_or_none(result.get("reasoning")) or "",
        model=snapshot.model_name,
        template_version=snapshot.template_version,
    )
    return data


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _as_text_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def task_list_item(task: Task, latest: ValidationSnapshot | None) -> dict[str, Any]:
    return {
        "id": task.pk,
        "title": task.title,
        "owner": task.owner.get_username(),
        "status": task.status,
        "is_open": task.is_open,
        "is_execution_active": task.is_execution_active,
        "requires_user_action": task.requires_user_action,
        "validation_outcome": task.validation_outcome or None,
        "validation_policy": task.validation_policy,
        "attempt_count": task.attempt_count,
        "max_attempts": task.max_attempts,
        "version": task.version,
        "claimed_by": task.claimed_by.get_username() if task.claimed_by_id else None,
        "latest_validation": validation_summary(latest),
        "created_at": task.created_at,
        "updated_at": task.updated_at,
    }


def task_detail(task: Task) -> dict[str, Any]:
    """Everything about one task in a constant number of queries."""
    originals = ValidationSnapshot.objects.originals().filter(task_id=task.pk)
    latest = originals.without_bodies().order_by("-created_at", "-id").first()
    data = task_list_item(task, latest)
    data["latest_validation"] = verdict(latest)

    runs_by_attempt: dict[int, list[int]] = {}
    for run_id, attempt_index in Run.objects.filter(task_id=task.pk).values_list(
        "id", "attempt_index"
    ):
        runs_by_attempt.setdefault(attempt_index, []).append(run_id)
    validation_by_attempt: dict[int, tuple[int, str]] = {}
    for snap_id, attempt_index, status in originals.order_by("created_at", "id").values_list(
        "id", "attempt_index", "status"
    ):
        validation_by_attempt[attempt_index] = (snap_id, status)  # the latest one wins
    indexes = sorted(
        set(range(1, task.attempt_count + 1)) | set(runs_by_attempt) | set(validation_by_attempt)
    )
    data["attempts"] = [
        {
            "attempt_index": index,
            "run_ids": runs_by_attempt.get(index, []),
            "validation_id": validation_by_attempt.get(index, (None, None))[0],
            "validation_status": validation_by_attempt.get(index, (None, None))[1],
        }
        for index in indexes
    ]
    if task.claimed_by_id and task.claimed_at:
        data["claim"] = {
            "claimed_by": task.claimed_by.get_username(),
            "claimed_at": task.claimed_at,
            "expires_at": task.claimed_at
            + timedelta(seconds=settings.REVIEW_CLAIM_TIMEOUT_SECONDS),
            "is_live": task.claim_is_live(),
        }
    else:
        data["claim"] = None
    data.update(
        request=task.request,
        rules=task.rules,
        plan=task.plan if isinstance(task.plan, dict) else {},
        validation_keywords=as_list(task.validation_keywords),
        final_answer=task.final_answer,
    )
    return data


def list_tasks(tasks: QuerySet[Task], *, ordering: str, limit: int, offset: int) -> dict[str, Any]:
    """One page of tasks in three queries whatever its size: the count, the rows (big
    columns deferred, latest verdict id as a subquery) and the verdict summaries.
    """
    count = tasks.count()
    latest_id = (
        ValidationSnapshot.objects.originals()
        .filter(task=OuterRef("pk"))
        .order_by("-created_at", "-id")
        .values("id")[:1]
    )
    tie_breaker = "-id" if ordering.startswith("-") else "id"
    rows = list(
        tasks.for_list()
        .annotate(latest_validation_ref=Subquery(latest_id))
        .order_by(ordering, tie_breaker)[offset : offset + limit]
    )
    wanted = [row.latest_validation_ref for row in rows if row.latest_validation_ref]
    snapshots = (
        {s.pk: s for s in ValidationSnapshot.objects.filter(pk__in=wanted).only(*SUMMARY_FIELDS)}
        if wanted
        else {}
    )
    items = [task_list_item(row, snapshots.get(row.latest_validation_ref)) for row in rows]
    return {"items": items, "count": count}


def _filtered(
    tasks: QuerySet[Task],
    *,
    status: list[TaskStatus] | None,
    requires_user_action: bool | None,
    is_open: bool | None,
    is_execution_active: bool | None,
    q: str | None,
) -> QuerySet[Task]:
    if status:
        tasks = tasks.filter(status__in=[str(s) for s in status])
    for flag, statuses in (
        (requires_user_action, states.USER_ACTION_STATUSES),
        (is_open, states.OPEN_STATUSES),
        (is_execution_active, states.EXECUTION_ACTIVE_STATUSES),
    ):
        if flag is True:
            tasks = tasks.filter(status__in=statuses)
        elif flag is False:
            tasks = tasks.exclude(status__in=statuses)
    if q and q.strip():
        text = q.strip()
        tasks = tasks.filter(Q(title__icontains=text) | Q(request__icontains=text))
    return tasks


# --- Endpoints --------------------------------------------------------------------------


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
    response={201: TaskOut, **error_responses()},
    summary="Create a task; its first attempt is queued",
)
def create_task(request: HttpRequest, payload: TaskCreateIn) -> Status:
    user = request.auth  # type: ignore[attr-defined]
    with transaction.atomic():
        task = services.task_create(
            owner=user,
            request=payload.request,
            title=payload.title,
            rules=payload.rules,
            plan=payload.plan.model_dump(mode="json") if payload.plan else None,
            validation_policy=payload.validation_policy,
            validation_keywords=payload.validation_keywords,
        )
        return Status(201, task_detail(get_visible_task(user, task.pk)))


@router.get(
    "/tasks",
    response={200: TaskListOut, **error_responses()},
    summary="List tasks (filters, ordering, limit/offset)",
)
def get_tasks(request: HttpRequest, query: Query[TaskListQuery]) -> dict[str, Any]:
    tasks = _filtered(
        visible_tasks(request.auth),  # type: ignore[attr-defined]
        status=query.status,
        requires_user_action=query.requires_user_action,
        is_open=query.is_open,
        is_execution_active=query.is_execution_active,
        q=query.q,
    )
    return list_tasks(tasks, ordering=query.ordering, limit=query.limit, offset=query.offset)


@router.get(
    "/tasks/active",
    response={200: TaskListOut, **error_responses()},
    summary="Open tasks (not terminal; includes needs_review)",
)
def get_active_tasks(request: HttpRequest, query: Query[ActiveTaskQuery]) -> dict[str, Any]:
    tasks = visible_tasks(request.auth).open()  # type: ignore[attr-defined]
    return list_tasks(tasks, ordering=query.ordering, limit=query.limit, offset=query.offset)


@router.get(
    "/tasks/{task_id}",
    response={200: TaskOut, **error_responses(404)},
    summary="One task: flags, outcome, attempts, answer, latest verdict, claim",
)
def get_task(request: HttpRequest, task_id: int) -> dict[str, Any]:
    return task_detail(get_visible_task(request.auth, task_id))  # type: ignore[attr-defined]


@router.post(
    "/tasks/{task_id}/feedback",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="satisfied / revise (comment required) / abandon",
)
def give_feedback(request: HttpRequest, task_id: int, payload: FeedbackIn) -> dict[str, Any]:
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
    with transaction.atomic():
        services.task_apply_feedback(
            task_id=task_id,
            actor=user,
            action=payload.action,
            comment=payload.comment,
            expected_version=payload.expected_version,
            force=payload.force,
        )
        return task_detail(get_visible_task(user, task_id))


@router.post(
    "/tasks/{task_id}/claim",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="Claim a task for review (reviewers); ?force=true takes over",
)
def claim_task(request: HttpRequest, task_id: int, query: Query[ForceQuery]) -> dict[str, Any]:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_reviewer(user)
    with transaction.atomic():
        services.task_claim(task_id=task_id, reviewer=user, force=query.force)
        return task_detail(get_visible_task(user, task_id))


@router.delete(
    "/tasks/{task_id}/claim",
    response={200: TaskOut, **error_responses(403, 404, 409)},
    summary="Release a claim (reviewers); ?force=true releases someone else's",
)
def release_claim(request: HttpRequest, task_id: int, query: Query[ForceQuery]) -> dict[str, Any]:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_reviewer(user)
    with transaction.atomic():
        services.task_release_claim(task_id=task_id, reviewer=user, force=query.force)
        return task_detail(get_visible_task(user, task_id))


@router.get(
    "/tasks/{task_id}/events",
    response={200: EventListOut, **error_responses(404)},
    summary="The task's state changes, oldest first",
)
def get_task_events(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(request.auth, task_id)  # type: ignore[attr-defined]
    events = TaskEvent.objects.filter(task_id=task_id).select_related("actor")
    items = [
        {
            "id": e.pk,
            "from_status": e.from_status,
            "to_status": e.to_status,
            "actor": e.actor.get_username() if e.actor_id else None,
            "actor_kind": e.actor_kind,
            "reason": e.reason,
            "attempt_index": e.attempt_index,
            "at": e.at,
        }
        for e in events
    ]
    return {"items": items, "count": len(items)}


def run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk,
        "task_id": run.task_id,
        "attempt_index": run.attempt_index,
        "kind": run.kind,
        "node_id": run.node_id,
        "node_role": run.node_role,
        "graph_index": run.graph_index,
        "session_id": str(run.session_id),
        "model": run.model_name,
        "status": run.status,
        "finish_reason": run.finish_reason,
        "output_text": run.output_text,
        "usage": run.usage if isinstance(run.usage, dict) else {},
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "tool_iterations": run.tool_iterations,
        "evidence_count": getattr(run, "evidence_count", 0),
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "duration_ms": run.duration_ms,
        "error": run.error,
        "warnings": as_list(run.warnings),
    }


@router.get(
    "/tasks/{task_id}/runs",
    response={200: RunListOut, **error_responses(404)},
    summary="The task's agent runs (all attempts, graph order)",
)
def get_task_runs(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(request.auth, task_id)  # type: ignore[attr-defined]
    runs = Run.objects.filter(task_id=task_id).annotate(evidence_count=Count("tool_evidence"))
    items = [run_out(run) for run in runs]
    return {"items": items, "count": len(items)}


@router.get(
    "/runs/{run_id}/messages",
    response={200: RunMessageListOut, **error_responses(404)},
    summary="A run's transcript, in order",
)
def get_run_messages(
    request: HttpRequest, run_id: int, query: Query[MessagePageQuery]
) -> dict[str, Any]:
    run = get_visible_run(request.auth, run_id)  # type: ignore[attr-defined]
    messages = run.messages.order_by("index")
    count = messages.count()
    items = [
        {
            "id": m.pk,
            "index": m.index,
            "role": m.role,
            "content": m.content,
            "payload": m.payload if isinstance(m.payload, dict) else {"value": m.payload},
            "created_at": m.created_at,
        }
        for m in messages[query.offset : query.offset + query.limit]
    ]
    return {"items": items, "count": count}


# --- Knowledge documents (operators) ----------------------------------------------------


def document_out(document: KnowledgeDocument, *, with_body: bool) -> dict[str, Any]:
    data = {
        "id": document.pk,
        "title": document.title,
        "source_url": document.source_url,
        "source_key": document.source_key,
        "created_at": document.created_at,
        "updated_at": document.updated_at,
    }
    if with_body:
        data["body"] = document.body
    return data


@router.post(
    "/documents",
    response={201: DocumentOut, **error_responses(403)},
    summary="Add a knowledge-base document (operators)",
    tags=["documents"],
)
def create_document(request: HttpRequest, payload: DocumentIn) -> Status:
    require_operator(request.auth)  # type: ignore[attr-defined]
    with transaction.atomic():
        document = KnowledgeDocument.objects.create(
            title=payload.title.strip(), body=payload.body, source_url=payload.source_url.strip()
        )
        return Status(201, document_out(document, with_body=True))


@router.get(
    "/documents",
    response={200: DocumentListOut, **error_responses(403)},
    summary="List or search knowledge-base documents (operators)",
    tags=["documents"],
)
def get_documents(request: HttpRequest, query: Query[DocumentQuery]) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    documents = KnowledgeDocument.objects.for_list()
    if query.q and query.q.strip():
        text = query.q.strip()
        documents = documents.filter(Q(title__icontains=text) | Q(body__icontains=text))
    count = documents.count()
    items = [
        document_out(d, with_body=False)
        for d in documents.order_by("title", "id")[query.offset : query.offset + query.limit]
    ]
    return {"items": items, "count": count}


@router.get(
    "/documents/{document_id}",
    response={200: DocumentOut, **error_responses(403, 404)},
    summary="One knowledge-base document with its body (operators)",
    tags=["documents"],
)
def get_document(request: HttpRequest, document_id: int) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    if document is None:
        raise Http404(f"Document {document_id} not found.")
    return document_out(document, with_body=True)
