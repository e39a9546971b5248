"""Reads of tasks and runs with the object permissions of A2: requesters see their own
tasks only (anyone else's is a 404, so ids do not leak); reviewers and operators see all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from project import roles
from tasks_app.workflow.models import (
    ClaimEvent,
    Feedback,
    Task,
    TaskEvent,
    TaskQuerySet,
    TaskStatusCount,
)
from tasks_app.workflow.signals import task_seen_by
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.task_settings import task_settings


def pending_decision_by(user: Any) -> Feedback | None:
    """The person's latest decision still in its undo window, for the toast."""
    if not getattr(user, "is_authenticated", False):
        return None
    return (
        Feedback.objects.pending()
        .filter(author=user)
        .select_related("task")
        .only("id", "action", "applies_at", "state", "task__id", "task__title")
        .order_by("-applies_at", "-id")
        .first()
    )


def pending_decision_on(task_id: int) -> Feedback | None:
    """The task's decision still in its undo window, if any."""
    return (
        Feedback.objects.pending()
        .filter(task_id=task_id)
        .select_related("author")
        .order_by("-id")
        .first()
    )


def last_decision_on(task_id: int) -> Feedback | None:
    """The task's latest decision that applied (not a note), with its comment."""
    return (
        Feedback.objects.in_effect()
        .filter(task_id=task_id)
        .exclude(action="note")
        .select_related("author")
        .order_by("-created_at", "-id")
        .first()
    )


def visible_tasks(user: Any) -> TaskQuerySet:
    return Task.objects.visible_to(user)


def get_visible_task(user: Any, task_id: int, *, channel: str = "the API") -> Task:
    """The task if ``user`` may see it, with the settings kept beside it
    (``task_settings``) in the same query; otherwise 404, whether or not it exists.
    The read is reported (``task_seen``: it shows the task's status and verdict)."""
    tasks = visible_tasks(user).select_related("owner", "claimed_by")
    task = task_settings().with_settings(tasks).filter(pk=task_id).first()
    if task is None:
        raise Http404(f"Task {task_id} not found.")
    task_seen_by(user, [task.pk], channel)
    return task


def require_visible_task(user: Any, task_id: int, *, channel: str = "the API") -> int:
    """Like ``get_visible_task`` for endpoints that need only the permission check: it
    reads the id alone, never the task's big text columns."""
    if not visible_tasks(user).filter(pk=task_id).exists():
        raise Http404(f"Task {task_id} not found.")
    task_seen_by(user, [task_id], channel)
    return task_id


def task_history(task_id: int) -> list[TaskEvent | ClaimEvent]:
    """The task's status changes and claim events, oldest first."""
    events: list[TaskEvent | ClaimEvent] = [
        *TaskEvent.objects.filter(task_id=task_id).select_related("actor"),
        *ClaimEvent.objects.filter(task_id=task_id).select_related("actor", "previous_holder"),
    ]
    events.sort(key=lambda e: e.at)
    return events


def visible_task(request: HttpRequest, task_id: int, *, defer_big: bool = True) -> Task:
    """The task if this user may see it, else 404 (no existence leak); the read is
    reported (``task_seen``, channel: the page's path)."""
    qs = Task.objects.visible_to(request.user).select_related("owner", "claimed_by")
    if defer_big:
        qs = qs.defer("request", "rules", "final_answer", "plan")
    task = get_object_or_404(qs, pk=task_id)
    task_seen_by(request.user, [task.pk], f"{request.method} {request.path}")
    return task


def can_act(user: Any, task: Task) -> bool:
    """The owner decides on their own task; reviewers on any."""
    return task.owner_id == user.pk or roles.is_reviewer(user)


def may_decide(user: Any, task_id: int) -> bool:
    """``can_act`` by the task's id, without reading the task: decisions on a task belong
    to its requester and to reviewers, as in the UI."""
    return roles.is_reviewer(user) or Task.objects.filter(pk=task_id, owner=user).exists()


def tasks_for_list(tasks: TaskQuerySet, *, ordering: str) -> TaskQuerySet:
    """Tasks for a list page: the rows without their big columns, in ``ordering`` (ties
    broken by id)."""
    tie_breaker = "-id" if ordering.startswith("-") else "id"
    return tasks.for_list().order_by(ordering, tie_breaker)


def status_counts(base: TaskQuerySet | None = None) -> dict[str, int]:
    """How many tasks are in each status. For all tasks on PostgreSQL this sums the
    trigger-kept counters (TaskStatusCount: a few rows whatever the table's size, issue
    16); for a subset (a requester's own tasks) or on SQLite it counts the rows."""
    if base is None and connection.vendor == "postgresql":
        rows = TaskStatusCount.objects.values_list("status").annotate(total=Sum("n"))
        return {status: int(total) for status, total in rows if total}
    tasks = base if base is not None else Task.objects.all()
    counted = tasks.order_by().values_list("status").annotate(n=Count("*"))
    return dict(counted.values_list("status", "n"))


def count_of(counts: dict[str, int], statuses: list[str] | None = None) -> int:
    """Tasks in ``statuses`` (all when None), from ``status_counts()``."""
    if statuses is None:
        return sum(counts.values())
    return sum(counts.get(s, 0) for s in statuses)


def review_queue_entries() -> QuerySet[Task, tuple[int, datetime]]:
    """The tasks in ``needs_review``, oldest first, each with when it entered the queue:
    the latest event that moved it there, or its creation without one: ``(id, entered)``."""
    entered = (
        TaskEvent.objects.filter(task_id=OuterRef("pk"), to_status=TaskStatus.NEEDS_REVIEW)
        .order_by("-at", "-id")
        .values("at")[:1]
    )
    return (
        Task.objects.needs_review()
        .annotate(entered=Coalesce(Subquery(entered), F("created_at")))
        .order_by("entered", "id")
        .values_list("pk", "entered")
    )


_QUEUE_AGE_SQL = """
    WITH entered AS (
        SELECT t.id, COALESCE(MAX(e.at), t.created_at) AS at
        FROM tasks_app_task t
        LEFT JOIN tasks_app_taskevent e ON e.task_id = t.id AND e.to_status = %(status)s
        WHERE t.status = %(status)s
        GROUP BY t.id
    ), aged AS (
        SELECT id, at, GREATEST(0, EXTRACT(EPOCH FROM (%(now)s - at)))::float8 AS age
        FROM entered
    )
    SELECT count(*),
           percentile_disc(0.5) WITHIN GROUP (ORDER BY age),
           percentile_disc(0.95) WITHIN GROUP (ORDER BY age),
           max(age),
           (SELECT id FROM aged ORDER BY at, id LIMIT 1)
    FROM aged
"""


def review_queue_age_summary(now: datetime) -> tuple[Any, Any, Any, Any, Any]:
    """PostgreSQL only: the review queue's ages at ``now`` in one query (the entry times
    of ``review_queue_entries`` in one join and grouping rather than a subquery per task,
    and ``percentile_disc``): (count, median, 95th percentile, oldest, the oldest task's
    id); count 0 and the rest None when the queue is empty."""
    with connection.cursor() as cursor:
        cursor.execute(_QUEUE_AGE_SQL, {"status": str(TaskStatus.NEEDS_REVIEW), "now": now})
        return cursor.fetchone()
