"""project.db: Prepared (a queryset compiled once, run with new values) and insert_new
(an INSERT built once per model), issue 16."""

from __future__ import annotations

import pytest

from project.db import MARKER_ID, MARKER_INDEX, MARKER_TEXT, Prepared, insert_new
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


def test_insert_new_writes_the_row_save_would_write() -> None:
    """project.db.insert_new (issue 16): the row it inserts equals the one ``save()``
    inserts for the same instance (defaults and auto_now_add filled), and the instance
    ends up saved (pk set, no longer adding)."""
    from django.db.models.functions import Now

    from tasks_app.models import OutboxJob

    fast = OutboxJob(name="tasks_app.run_attempt", args=[1, "x"], job_id="j-fast", task_ref=7)
    insert_new(fast)
    slow = OutboxJob(name="tasks_app.run_attempt", args=[1, "x"], job_id="j-slow", task_ref=7)
    slow.save()
    assert fast.pk is not None and not fast._state.adding
    columns = [f.attname for f in OutboxJob._meta.concrete_fields if f.attname != "id"]
    got = OutboxJob.objects.filter(pk=fast.pk).values(*columns).get()
    want = OutboxJob.objects.filter(pk=slow.pk).values(*columns).get()
    assert abs(got.pop("created_at") - want.pop("created_at")).total_seconds() < 5
    assert {**got, "job_id": "j"} == {**want, "job_id": "j"}
    # An expression as a value: save() does it (the SQL built once has no room for it).
    later = OutboxJob(name="n", args=[], job_id="j-expr", not_before=Now())
    insert_new(later)
    assert OutboxJob.objects.get(pk=later.pk).not_before is not None
