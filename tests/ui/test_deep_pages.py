"""Deep pages of the task list and the review queue (issue 28 item 2): a page in the
second half of a list is read from its other end (project.pagination.CountedPaginator),
so the last page skips no row; it still holds the tasks of a plain slice."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory

PAGE = 50


def _offsets(queries: list[dict[str, Any]]) -> list[int]:
    """The OFFSETs of the queries that read the tasks table."""
    found = []
    for query in queries:
        sql = query["sql"]
        if "tasks_app_task" in sql:
            found += [int(n) for n in re.findall(r"OFFSET (\d+)", sql)]
    return found


def _make_tasks(requester: Any) -> None:
    start = timezone.now() - timedelta(days=1)
    for i in range(233):
        TaskFactory(
            owner=requester,
            title=f"Task {i}",
            status=(S.NEEDS_REVIEW, S.CLOSED)[i % 2],
            # Triples share a created_at: the id breaks the tie, as in the ordering.
            created_at=start + timedelta(minutes=i // 3),
        )


def test_last_and_deep_pages_hold_a_plain_slice_read_from_the_nearest_end(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 28 item 2: the last page of the task list (full list and a status filter)
    and of the review queue holds the tasks of slicing the ordered list, and skips no
    row to get there (no OFFSET); a page three quarters deep skips only the rows after
    it; the first half still pages from the start."""
    _make_tasks(requester)
    client.force_login(reviewer)
    newest_first = ("-created_at", "-id")
    review = Task.objects.filter(status=S.NEEDS_REVIEW)
    cases = [
        (reverse("task_list_all"), {}, Task.objects.all(), newest_first),
        (
            reverse("task_list_all"),
            {"status": S.CLOSED},
            Task.objects.filter(status=S.CLOSED),
            newest_first,
        ),
        (reverse("review_queue"), {}, review, ("created_at", "id")),
        (
            reverse("review_queue"),
            {"q": "Task 1"},
            review.filter(title__icontains="Task 1"),
            ("created_at", "id"),
        ),
    ]
    for url, params, tasks, ordering in cases:
        expected = list(tasks.order_by(*ordering).values_list("pk", flat=True))
        last = -(-len(expected) // PAGE)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, {**params, "page": last})
        assert [t.pk for t in response.context["tasks"]] == expected[(last - 1) * PAGE :], url
        assert _offsets(queries.captured_queries) == [], (url, params)
        if last >= 4:
            deep = last - 1
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url, {**params, "page": deep})
            assert [t.pk for t in response.context["tasks"]] == expected[
                (deep - 1) * PAGE : deep * PAGE
            ]
            assert _offsets(queries.captured_queries) == [len(expected) - deep * PAGE]
        response = client.get(url, {**params, "page": 2})
        assert [t.pk for t in response.context["tasks"]] == expected[PAGE : 2 * PAGE]
