"""Issue 45, item 2: a task's audit rates, the operator's exception to the floor and its
second judge are evidence_app's, kept beside the task (``TaskAuditSettings``), not
columns of tasks_app's task. The tasks API keeps its fields (the document is unchanged)
and reads them in the task's own query; a migration moves the values of the tasks a
database already holds, and back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evidence_app.models import TaskAuditSettings
from tasks_app.actions import task_create
from tasks_app.records import Task
from tests.api.conftest import bearer_client

JUDGE = "offline:judge-corroborating"
# Before the move: evidence_app before its 0012 (tasks_app's 0028, which follows it, is
# reversed with it); the task's columns as tasks_app's 0027 left them.
BEFORE = [("evidence_app", "0011_issue43_threshold_per_judge")]
TASKS_BEFORE = [("tasks_app", "0027_issue46_judge_webhook_events")]


def test_a_task_with_default_settings_stores_no_row_and_one_with_settings_does(
    requester: Any, operator: Any, settings: Any
) -> None:
    """Issue 45: only a task created with its own settings gets a row beside it; the
    operator's exception to the floor is recorded there (who, when, why)."""
    settings.AUDIT_RATE = 0.05
    plain = task_create(owner=requester, request="Budget?", enqueue=False)
    own = task_create(
        owner=operator,
        request="Load test",
        audit_rate=0,
        audit_reject_rate=0.5,
        audit_rate_reason="synthetic load test",
        second_model=JUDGE,
        enqueue=False,
    )
    assert not TaskAuditSettings.objects.filter(task=plain).exists()
    row = TaskAuditSettings.objects.get(task=own)
    assert (row.audit_rate, row.audit_reject_rate, row.second_model) == (0.0, 0.5, JUDGE)
    assert (row.audit_rate_set_by, row.audit_rate_reason) == (operator, "synthetic load test")
    assert row.audit_rate_set_at is not None


def test_the_task_api_shows_the_settings_in_as_many_queries_with_a_row_as_without(
    requester: Any,
) -> None:
    """Issue 45: GET /tasks/{id} answers the task's own audit rates and second model,
    or the defaults, read with the task (no query more for the row beside it)."""
    api = bearer_client(requester)
    plain = task_create(owner=requester, request="Budget?", enqueue=False)
    own = task_create(
        owner=requester,
        request="Budget again?",
        audit_rate=0.5,
        audit_reject_rate=1,
        second_model=JUDGE,
        enqueue=False,
    )
    api.get(f"/api/v1/tasks/{plain.pk}")  # the token's first use is written once
    counts = []
    bodies = []
    for task in (plain, own):
        with CaptureQueriesContext(connection) as queries:
            response = api.get(f"/api/v1/tasks/{task.pk}")
        assert response.status_code == 200, response.content
        counts.append(len(queries))
        bodies.append(response.json())
    assert counts[0] == counts[1]
    shown = [(b["audit_rate"], b["audit_reject_rate"], b["second_model"]) for b in bodies]
    assert shown == [(None, None, ""), (0.5, 1.0, JUDGE)]


def _migrate(target: list[tuple[str, str]] | None) -> MigrationExecutor:
    """Migrate to ``target``, or (None) to the latest migration of every app: the tests
    that run next on this database need all of it back."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target if target is not None else executor.loader.graph.leaf_nodes())
    return executor


def _old_settings() -> dict[int, tuple[Any, ...]]:
    """The settings columns of every task, read from the task table before the move."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, audit_rate, audit_reject_rate, audit_rate_set_by_id, "
            "audit_rate_reason, second_model, audit_rate_set_at IS NOT NULL "
            "FROM tasks_app_task ORDER BY id"
        )
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_each_tasks_settings_beside_it_and_back(operator: Any) -> None:
    """Issue 45: a database holding tasks keeps their settings through the move: applied,
    each task that had any has a row with the same values (the others none); reversed,
    the task table holds them again."""
    _migrate(BEFORE)
    try:
        state = MigrationExecutor(connection).loader.project_state([*BEFORE, *TASKS_BEFORE])
        OldTask = state.apps.get_model("tasks_app", "Task")
        common = {"owner_id": operator.pk, "request": "Budget?"}
        plain = OldTask.objects.create(title="plain", **common).pk
        excepted = OldTask.objects.create(
            title="excepted",
            audit_rate=0.0,
            audit_reject_rate=0.25,
            audit_rate_set_by_id=operator.pk,
            audit_rate_set_at=timezone.now(),
            audit_rate_reason="synthetic load test",
            **common,
        ).pk
        judged = OldTask.objects.create(title="judged", second_model="none", **common).pk
        before = _old_settings()
    finally:
        _migrate(None)

    assert "second_model" not in {f.name for f in Task._meta.get_fields()}
    rows = {row.task_id: row for row in TaskAuditSettings.objects.all()}
    assert set(rows) == {excepted, judged}
    row = rows[excepted]
    assert (row.audit_rate, row.audit_reject_rate, row.audit_rate_set_by_id) == (
        0.0,
        0.25,
        operator.pk,
    )
    assert row.audit_rate_reason == "synthetic load test" and row.audit_rate_set_at is not None
    assert (rows[judged].second_model, rows[judged].audit_rate) == ("none", None)
    assert Task.objects.filter(pk=plain).exists()

    _migrate(BEFORE)
    try:
        assert _old_settings() == before
    finally:
        _migrate(None)
    assert set(TaskAuditSettings.objects.values_list("task_id", flat=True)) == {excepted, judged}
