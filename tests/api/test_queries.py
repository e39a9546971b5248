"""Listing is cheap whatever the size (A1, STYLE: list queries defer big columns)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evidence_app.models import ValidationSnapshot
from tasks_app.models import Run, Task, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S

pytestmark = pytest.mark.django_db

BIG = "z" * 20_000


def _make_tasks(owner: Any, count: int) -> list[Task]:
    tasks = Task.objects.bulk_create(
        Task(
            owner=owner,
            title=f"Task {i}",
            request=BIG,
            final_answer=BIG,
            status=S.NEEDS_REVIEW if i % 2 else S.AWAITING_FEEDBACK,
        )
        for i in range(count)
    )
    ValidationSnapshot.objects.bulk_create(
        ValidationSnapshot(
            task=task,
            attempt_index=1,
            status="accepted",
            rendered_input=BIG,
            result={"issues": [BIG]},
        )
        for task in tasks[::3]
    )
    runs = Run.objects.bulk_create(
        Run(task=task, attempt_index=1, model_name="m") for task in tasks[:50]
    )
    ToolEvidence.objects.bulk_create(
        ToolEvidence(
            run=run, task_id=run.task_id, attempt_index=1, sequence=0, tool_name="t", content=BIG
        )
        for run in runs
    )
    return tasks


def test_listing_1000_tasks_takes_a_constant_number_of_queries_and_no_bodies(
    requester: Any, otto: Client, django_assert_max_num_queries: Any
) -> None:
    """A1: GET /tasks?limit=1000 runs a fixed handful of queries (auth, count, rows,
    verdict summaries), never selects request/final_answer/plan, validator bodies or
    evidence content, and returns the latest verdict for each task."""
    _make_tasks(requester, 1000)
    with django_assert_max_num_queries(8), CaptureQueriesContext(connection) as queries:
        response = otto.get("/api/v1/tasks?limit=1000")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1000
    assert len(body["items"]) == 1000
    with_verdict = [i for i in body["items"] if i["latest_validation"]]
    assert len(with_verdict) == 334
    assert with_verdict[0]["latest_validation"]["status"] == "accepted"

    sql = " ".join(q["sql"] for q in queries)
    for column in (
        '"tasks_app_task"."request"',
        '"tasks_app_task"."final_answer"',
        '"tasks_app_task"."plan"',
        '"evidence_app_validationsnapshot"."rendered_input"',
        '"evidence_app_validationsnapshot"."result"',
        '"evidence_app_validationsnapshot"."raw_responses"',
        "tasks_app_toolevidence",
    ):
        assert column not in sql, column
    assert BIG not in response.content.decode()


def test_query_count_does_not_grow_with_the_page(
    requester: Any, otto: Client, django_assert_max_num_queries: Any
) -> None:
    """A1: 10 tasks and 300 tasks cost the same number of queries."""
    _make_tasks(requester, 300)
    assert otto.get("/api/v1/me").status_code == 200  # token last_used_at and roles settled
    counts = []
    for limit in (10, 300):
        with CaptureQueriesContext(connection) as queries:
            assert otto.get(f"/api/v1/tasks?limit={limit}").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]
