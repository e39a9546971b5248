"""project.db: Prepared (a queryset compiled once, run with new values), insert_new (an
INSERT built once per model) and release_connection, issue 16."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from project.db import (
    MARKER_ID,
    MARKER_INDEX,
    MARKER_TEXT,
    MARKER_TIME,
    Prepared,
    insert_new,
    release_connection,
)
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


def test_every_marker_type_runs_on_this_backend() -> None:
    """Issue 22: each marker type (an id, an index, a text, a time) is found among the
    compiled parameters on this database, including in the form the backend gives it
    (SQLite passes a time as text), and a real value takes the same form: the rows
    equal the ORM's. This failed on SQLite for the time marker."""
    tasks = [TaskFactory(title=f"t{i}") for i in range(3)]
    for i, task in enumerate(tasks):
        Run.objects.create(task=task, attempt_index=i + 1, kind="main", status="completed")
    queryset = (
        Run.objects.filter(
            task__title=MARKER_TEXT,
            task_id=MARKER_ID,
            attempt_index__lte=MARKER_INDEX,
            started_at__lt=MARKER_TIME,
        )
        .order_by("id")
        .values_list("task_id", "attempt_index", "started_at")
    )
    prepared = Prepared(queryset, title=MARKER_TEXT, pk=MARKER_ID, n=MARKER_INDEX, t=MARKER_TIME)
    later, earlier = timezone.now() + timedelta(hours=1), timezone.now() - timedelta(days=1)
    for task in tasks:
        for bound in (later, earlier):
            expected = list(
                Run.objects.filter(
                    task__title=task.title,
                    task_id=task.pk,
                    attempt_index__lte=3,
                    started_at__lt=bound,
                )
                .order_by("id")
                .values_list("task_id", "attempt_index", "started_at")
            )
            got = prepared.rows(title=task.title, pk=task.pk, n=3, t=bound)
            assert got == expected
            assert len(got) == (1 if bound is later else 0)


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


def test_insert_new_returns_a_value_read_by_the_same_statement() -> None:
    """Issue 48: ``insert_new(..., also=(sql, params))`` returns a scalar sub-SELECT
    computed by the INSERT itself (one statement), and the same value when the row is
    saved by ``save()`` (a value that is an expression) and read after it."""
    from django.db.models.functions import Now
    from django.test.utils import CaptureQueriesContext

    from tasks_app.models import OutboxJob

    task = TaskFactory()
    title = (f'(SELECT "title" FROM {Task._meta.db_table} WHERE "id" = %s)', [task.pk])
    with CaptureQueriesContext(connection) as queries:
        found = insert_new(OutboxJob(name="n", args=[], job_id="j-also"), also=title)
    assert found == task.title and len(queries.captured_queries) == 1
    later = OutboxJob(name="n", args=[], job_id="j-also-expr", not_before=Now())
    assert insert_new(later, also=title) == task.title
    assert OutboxJob.objects.filter(job_id__startswith="j-also").count() == 2


@pytest.mark.django_db(transaction=True)
def test_release_connection_gives_back_only_a_pooled_postgresql_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before a model call a job gives its connection back to the pool: on PostgreSQL with
    a pool (DB_POOL_MAX_SIZE) and outside a transaction only; without a pool, inside a
    transaction, or on SQLite (which has no pool) the connection is kept."""
    wrapper = connections["default"]
    wrapper.ensure_connection()
    closed: list[str] = []
    monkeypatch.setattr(type(wrapper), "close", lambda self: closed.append(self.vendor))
    options = wrapper.settings_dict.get("OPTIONS", {})
    pool = {"max_size": 2}
    pooled: dict[str, Any] = {**wrapper.settings_dict, "OPTIONS": {**options, "pool": pool}}

    release_connection()
    assert closed == []  # no pool configured
    with transaction.atomic(), monkeypatch.context() as patched:
        patched.setattr(wrapper, "settings_dict", pooled)
        release_connection()
    assert closed == []  # inside a transaction
    with monkeypatch.context() as patched:
        patched.setattr(wrapper, "settings_dict", pooled)
        release_connection()
    assert closed == (["postgresql"] if connection.vendor == "postgresql" else [])
