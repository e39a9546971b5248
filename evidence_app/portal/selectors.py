"""What the portal's pages read: a page of a task list with its status counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page

from project.pagination import CountedPaginator
from tasks_app.records import (
    EXECUTION_ACTIVE_STATUSES,
    RUNNABLE_STATUSES,
    Task,
    TaskStatus,
    count_of,
    status_counts,
)

TASKS_PER_PAGE = 50

# A list refreshes itself while one of its tasks may change with no one acting: queued,
# running or being validated (the task page polls in the same statuses).
POLLING_STATUSES = EXECUTION_ACTIVE_STATUSES | RUNNABLE_STATUSES


@dataclass(frozen=True)
class TaskListPage:
    page: Page[Any]
    counts: dict[str, int]
    polling: bool


def task_list_page(*, owner: Any, status: str, page_number: str | None) -> TaskListPage:
    """One page of the tasks of ``owner`` (all tasks when None), newest first, filtered by
    ``status`` when it is one; counted from the status counters for all tasks, by a count
    of the owner's rows otherwise."""
    base = Task.objects.all() if owner is None else Task.objects.filter(owner=owner)
    counts = status_counts(None if owner is None else base)
    qs = base.for_list().order_by("-created_at", "-id")
    if status in TaskStatus.values:
        qs = qs.filter(status=status)
    total = count_of(counts, [status] if status in TaskStatus.values else None)
    page = CountedPaginator(qs, TASKS_PER_PAGE, count=total).get_page(page_number)
    polling = any(counts.get(s, 0) for s in POLLING_STATUSES)
    return TaskListPage(page=page, counts=counts, polling=polling)
