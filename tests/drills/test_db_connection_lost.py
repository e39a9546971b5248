"""Drill 2: the worker's database connections are killed mid-run (X1, S3, E2).

A real Celery worker (solo pool, Redis broker, ``application_name=drill-worker`` on its
PostgreSQL connections) runs a task on the scripted ``drill:slow`` model. After the
second tool result is stored, every backend of that worker is ended with
``pg_terminate_backend`` while the model is "thinking". The job's next write fails; the
job ends with the database error (the worker process survives and Celery's Django fixup
drops the broken connection), the attempt's heartbeat stops, and the **reaper** (beat in
the same worker, every second, 5 s lease) re-queues the task; the new attempt runs on a
fresh connection and finishes. No transition is half-written: the event log is one
consistent chain ending at the task's status, and the evidence stored before the loss
is all still there.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection

from tasks_app.models import Run, RunStatus, Task, TaskEvent, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S
from tests.drills.support import Worker, database_url, redis_url, report, wait_for
from tests.drills.test_worker_kill import worker_env
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = [
    pytest.mark.drill,
    pytest.mark.celery_worker,
    pytest.mark.postgres(
        reason="pg_terminate_backend ends the worker's connections; SQLite has no server"
    ),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]

APP_NAME = "drill-worker"


def terminate_worker_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            [APP_NAME],
        )
        return int(cursor.fetchone()[0])


def test_database_connection_lost_mid_run_is_retried_cleanly(tmp_path: Path) -> None:
    """X1/S3/E2: pg_terminate_backend mid-run: the job fails cleanly, the task is
    re-queued and finishes; no half-written transition, no lost evidence."""
    redis = redis_url()
    db_url = database_url(application_name=APP_NAME)
    if redis is None or db_url is None:
        pytest.skip("needs REDIS_URL (a Redis broker) and a PostgreSQL test database")
    KnowledgeDocumentFactory(
        title="Training Budget", body="The annual training budget per employee is 1,750 EUR."
    )
    task = TaskFactory(request="What is the annual training budget per employee?")
    queue = f"drill-db-{uuid.uuid4().hex[:10]}"
    env = worker_env(tmp_path, redis, db_url)
    sender = Celery("drill-sender", broker=redis, set_as_current=False)
    worker = Worker(env=env, queue=queue, log_path=tmp_path / "worker.log", beat=True)
    try:
        sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=queue)
        reached = wait_for(
            lambda: ToolEvidence.objects.filter(task_id=task.pk).count() >= 2, timeout=30
        )
        assert reached, "no second tool call within 30 s:\n" + worker.output()[-3000:]
        terminated = terminate_worker_backends()
        lost_at = time.monotonic()
        before = {(e.pk, e.content_sha256) for e in ToolEvidence.objects.filter(task_id=task.pk)}
        assert terminated >= 1
        done = wait_for(
            lambda: Task.objects.get(pk=task.pk).status == S.AWAITING_FEEDBACK, timeout=60
        )
        recovered_in = time.monotonic() - lost_at
        output = worker.output()
        assert done, "task did not finish after the connection loss:\n" + output[-5000:]
        assert worker.process.poll() is None, "the worker process died"
    finally:
        worker.stop()
        sender.close()

    task = Task.objects.get(pk=task.pk)
    events = list(TaskEvent.objects.filter(task=task).order_by("at", "id"))
    status = S.OPEN
    for event in events:
        assert event.from_status == status, [(e.from_status, e.to_status) for e in events]
        status = event.to_status
    assert status == task.status == S.AWAITING_FEEDBACK
    path = [(e.from_status, e.to_status) for e in events]
    assert path.count((S.RUNNING, S.VALIDATING)) == 1
    assert (S.RUNNING, S.OPEN) in path  # the reaper re-queued the attempt that lost its DB
    now = {(e.pk, e.content_sha256) for e in ToolEvidence.objects.filter(task=task)}
    assert before <= now
    runs = list(Run.objects.filter(task=task).order_by("attempt_index", "id"))
    assert [r.status for r in runs] == [RunStatus.FAILED, RunStatus.COMPLETED]
    assert "OperationalError" in output or "InterfaceError" in output or "terminat" in output
    report(
        "db connection lost",
        f"{terminated} backend(s) terminated mid-run; job stopped cleanly, worker alive, "
        f"re-queued by the reaper, finished {recovered_in:.1f}s later; "
        f"{len(before - now)} evidence lost, 0 half-written transitions",
    )
