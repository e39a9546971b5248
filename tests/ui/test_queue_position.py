"""Issue 16/13: the task page's place in the queue (position, total, previous, next, the
task after a decision) read by keyset on the queue order, agrees with the whole queue's
id list (the old way, O(queue) per page), for every task and filter, with tied
creation times."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evidence_app.review.queue_selectors import queue_position, queue_queryset
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db


def reference(user: Any, filters: dict[str, Any], task_id: int) -> dict[str, Any]:
    ids = list(queue_queryset(user, filters).values_list("pk", flat=True))
    if task_id not in ids:
        return {
            "position": 0,
            "total": len(ids),
            "prev_id": None,
            "next_id": ids[0] if ids else None,
        }
    i = ids.index(task_id)
    return {
        "position": i + 1,
        "total": len(ids),
        "prev_id": ids[i - 1] if i > 0 else None,
        "next_id": ids[i + 1] if i + 1 < len(ids) else None,
        "after_decision_id": ids[i + 1] if i + 1 < len(ids) else (ids[i - 1] if i else None),
    }


def test_position_matches_the_whole_queue_for_every_task_and_filter(
    reviewer: Any, requester: Any
) -> None:
    """Issue 16: same answers as the id list, ties on created_at ordered by id."""
    start = timezone.now() - timedelta(hours=1)
    tasks = []
    for i in range(9):
        task = TaskFactory(
            owner=requester,
            status=S.NEEDS_REVIEW,
            title=f"budget {i}" if i % 2 else f"leave {i}",
            created_at=start + timedelta(minutes=i // 3),  # three tasks per minute: ties
        )
        if i % 3:
            ValidationSnapshotFactory(task=task, status="insufficient_evidence")
        tasks.append(task)
    outside = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    Task.objects.filter(pk=tasks[4].pk).update(assigned_to=reviewer)
    for filters in (
        {},
        {"q": "budget"},
        {"vstatus": "none"},
        {"vstatus": "insufficient_evidence"},
        {"assigned": "mine"},
        {"q": "nothing matches"},
    ):
        # A task id that does not exist is, like a task outside the queue, at position 0.
        missing = outside.pk + 1000
        for task_id in [*(t.pk for t in tasks), outside.pk, missing]:
            assert queue_position(reviewer, filters, task_id) == reference(
                reviewer, filters, task_id
            ), (filters, task_id)


def test_a_decision_in_its_undo_window_leaves_the_count_with_its_row(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 1: a task whose decision waits in its undo window has left the queue,
    so the queue's "waiting" count and the task page's position count it out too (the
    page said "1 waiting" above "Nothing to review")."""
    from django.urls import reverse

    from tasks_app.workflow import services

    decided, waiting = (
        TaskFactory(owner=requester, status=S.NEEDS_REVIEW, title=f"task {i}") for i in range(2)
    )
    services.task_decide(task_id=decided.pk, actor=reviewer, action="satisfied", undo_seconds=300)
    assert decided.feedback.get().state == "pending"
    client.force_login(reviewer)
    page = client.get(reverse("review_queue"))
    html = page.content.decode()
    assert '<strong id="queue-remaining">1</strong>' in html
    assert f'data-task-id="{waiting.pk}"' in html
    assert f'data-task-id="{decided.pk}"' not in html
    assert queue_position(reviewer, {}, waiting.pk)["total"] == 1
    assert queue_position(reviewer, {}, decided.pk)["total"] == 1


def test_position_is_the_same_counted_from_either_end_with_decisions_waiting(
    reviewer: Any, requester: Any
) -> None:
    """Issue 48: the task page counts a task's place from the nearer end of the queue (the
    tasks before it, or the queue's size less those after it), less the tasks whose
    decision waits in its undo window on that side. Creation times spread unevenly (most
    tasks old, a few new, ties) put tasks on both sides of the midpoint; every task's
    position, total and neighbours still match the whole queue's id list, with waiting
    decisions before, after and on a task itself."""
    from tasks_app.workflow import services

    now = timezone.now()
    offsets = [600, 599, 599, 598, 500, 400, 30, 20, 20, 10, 5, 1]  # minutes before now
    tasks = [
        TaskFactory(
            owner=requester,
            status=S.NEEDS_REVIEW,
            title=f"task {i}",
            created_at=now - timedelta(minutes=minutes),
        )
        for i, minutes in enumerate(offsets)
    ]
    for held in (tasks[1], tasks[5], tasks[8], tasks[11]):
        services.task_decide(task_id=held.pk, actor=reviewer, action="satisfied", undo_seconds=300)
        assert held.feedback.get().state == "pending"
    TaskFactory(owner=requester, status=S.CLOSED, created_at=now - timedelta(minutes=300))
    for task in tasks:
        got = queue_position(reviewer, {}, task.pk)
        assert got == reference(reviewer, {}, task.pk), task.title
    assert [queue_position(reviewer, {}, t.pk)["position"] for t in tasks] == [
        1,
        0,
        2,
        3,
        4,
        0,
        5,
        6,
        0,
        7,
        8,
        0,
    ]
