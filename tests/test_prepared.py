"""project.db.Prepared: a queryset compiled once, run with new values (issue 16)."""

from __future__ import annotations

import pytest

from project.db import MARKER_ID, MARKER_INDEX, MARKER_TEXT, Prepared
from tasks_app.models import Run, Task
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def test_rows_equal_the_orm_for_other_values_with_json_parsed() -> None:
    """The SQL compiled for the markers, run for real values, returns what the ORM's own
    ``values_list`` returns for them, JSON columns parsed, wrapped integers included."""
    first, second = TaskFactory(), TaskFactory()
    for task, attempt, warnings in ((first, 1, ["w1"]), (first, 2, []), (second, 1, ["x"])):
        Run.objects.create(
            task=task, attempt_index=attempt, kind="main", status="completed", warnings=warnings
        )
    prepared = Prepared(
        Run.objects.filter(task_id=MARKER_ID, attempt_index=MARKER_INDEX)
        .order_by("id")
        .values_list("task_id", "attempt_index", "warnings"),
        task_id=MARKER_ID,
        attempt=MARKER_INDEX,
    )
    for task, attempt in ((first, 1), (first, 2), (second, 1), (second, 3)):
        expected = list(
            Run.objects.filter(task_id=task.pk, attempt_index=attempt)
            .order_by("id")
            .values_list("task_id", "attempt_index", "warnings")
        )
        assert prepared.rows(task_id=task.pk, attempt=attempt) == expected
    assert prepared.rows(task_id=first.pk, attempt=1) == [(first.pk, 1, ["w1"])]


def test_a_marker_missing_from_the_query_or_a_value_missing_is_refused() -> None:
    with pytest.raises(ValueError, match="markers not among"):
        Prepared(Task.objects.filter(title=MARKER_TEXT).values_list("id"), pk=MARKER_ID)
    with pytest.raises(ValueError, match="value of its own"):
        Prepared(Task.objects.filter(pk=MARKER_ID).values_list("id"), a=MARKER_ID, b=MARKER_ID)
    prepared = Prepared(Task.objects.filter(pk=MARKER_ID).values_list("id"), pk=MARKER_ID)
    with pytest.raises(TypeError, match="expected values"):
        prepared.rows(id=1)
