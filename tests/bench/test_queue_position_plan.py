"""Issue 48: ``python -m bench.queue_position_plan`` prints the queue position query's
plan for the queue's first, middle and last task, with the position the task page
shows for each. Asserts the shape of its text, never timings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from bench import queue_position_plan
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.postgres(reason="the keyset query and EXPLAIN ANALYZE are PostgreSQL's"),
]


def test_the_plan_names_each_task_and_its_position(requester: Any) -> None:
    now = timezone.now()
    tasks = [
        TaskFactory(owner=requester, status=S.NEEDS_REVIEW, created_at=now - timedelta(hours=i))
        for i in range(5, 0, -1)
    ]
    text = queue_position_plan.run()
    assert text.startswith("5 tasks in needs_review")
    for name, task, position in (
        ("first", tasks[0], 1),
        ("middle", tasks[2], 3),
        ("last", tasks[4], 5),
    ):
        assert f"== {name} task {task.pk}: " in text
        assert f"position {position} of 5" in text
    assert text.count("Execution Time:") == 3
