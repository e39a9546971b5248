"""Issue 16, U1: counts per status come from trigger-kept counters that always equal a
count of the rows, whatever wrote them (create, transition, bulk insert, delete)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Count

from tasks_app.models import Task
from tasks_app.workflow import transitions
from tasks_app.workflow.selectors import count_of, status_counts
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory


def counted() -> dict[str, int]:
    rows = Task.objects.order_by().values_list("status").annotate(n=Count("*"))
    return dict(rows.values_list("status", "n"))


@pytest.mark.django_db
def test_status_counters_follow_every_kind_of_write(requester: Any) -> None:
    """Counters equal the rows after creates, transitions, a bulk insert, an update of
    other columns, a status update in bulk and deletes (PostgreSQL's trigger-kept
    counters; on SQLite status_counts counts the rows)."""
    assert status_counts() == counted() == {}
    tasks = [TaskFactory(owner=requester) for _ in range(5)]
    transitions.task_transition(transitions.Transition(task_id=tasks[0].pk, to_status=S.RUNNING))
    transitions.task_transition(transitions.Transition(task_id=tasks[0].pk, to_status=S.VALIDATING))
    transitions.task_transition(transitions.Transition(task_id=tasks[1].pk, to_status=S.ABANDONED))
    Task.objects.bulk_create([Task(owner=requester, title=f"b{i}", request="r") for i in range(40)])
    Task.objects.filter(pk=tasks[2].pk).update(heartbeat_at=None, title="renamed")
    Task.objects.filter(pk__in=[tasks[3].pk, tasks[4].pk]).update(status=S.NEEDS_REVIEW)
    Task.objects.filter(title__startswith="b1").delete()
    expected = counted()
    assert status_counts() == expected
    assert expected[S.VALIDATING] == 1 and expected[S.NEEDS_REVIEW] == 2
    assert count_of(status_counts()) == Task.objects.count()
    assert count_of(status_counts(), [S.OPEN, S.ABANDONED]) == (
        Task.objects.filter(status__in=[S.OPEN, S.ABANDONED]).count()
    )


@pytest.mark.django_db
def test_status_counts_of_a_subset_count_its_rows(requester: Any, other_requester: Any) -> None:
    """A requester's own counts are counted from their rows, not the global counters."""
    TaskFactory(owner=requester)
    TaskFactory(owner=other_requester, status=S.NEEDS_REVIEW)
    assert status_counts(Task.objects.filter(owner=requester)) == {S.OPEN: 1}
