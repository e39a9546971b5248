"""Drill 1: a worker is SIGKILLed mid-run and nothing is lost or done twice (X1, E2, S3).

A real Celery worker (solo pool) on the Redis broker runs a task on the scripted
``drill:slow`` model (1.5 s per model reply, three ``search_knowledge`` calls). Right
after the second tool result is stored, the whole worker process group gets SIGKILL. A
new worker (with beat, so the reaper runs every second) is started.

Recovery is by the **reaper**: the dead attempt's heartbeat goes stale after
``ATTEMPT_LEASE_SECONDS`` (5 s here), the reaper moves the task back to ``open``,
marks the dead run failed and queues a re-run of the same attempt (issue 17). The
killed job's own message is also redelivered by Redis once ``CELERY_VISIBILITY_TIMEOUT``
(12 s here, with a matching 10 s ``CELERY_TASK_TIME_LIMIT``) has passed; that delivery
finds the task already moved on and does nothing (result ``duplicate``). Both are
checked.

Drill 1b: the same kill with no reaper running (a worker without beat that does not
consume ``maintenance``, so it runs no reaper sweep at start either): the redelivered
message itself takes the expired attempt over (issue 17, result ``taken_over``).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from celery import Celery

from evidence_app.models import ValidationSnapshot
from project.queues import ATTEMPTS, VALIDATION, WEBHOOKS
from tasks_app.models import Run, RunMessage, RunStatus, Task, TaskEvent, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S
from tests.drills.support import Worker, database_url, redis_url, report, wait_for
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = [
    pytest.mark.drill,
    pytest.mark.celery_worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]

LEASE_SECONDS = 5
VISIBILITY_SECONDS = 20


def worker_env(tmp_path: Path, redis: str, db_url: str, *, visibility: int = 12) -> dict[str, str]:
    return {
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": redis,
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "AGENT_MODEL": "drill:slow",
        "VALIDATOR_MODEL": "drill:accept",
        "DRILL_SLOW_SECONDS": "1.5",
        "DRILL_SLOW_TOOL_CALLS": "3",
        "ATTEMPT_LEASE_SECONDS": str(LEASE_SECONDS),
        "REAPER_INTERVAL_SECONDS": "1",
        "CELERY_TASK_TIME_LIMIT": "10",
        "CELERY_VISIBILITY_TIMEOUT": str(visibility),
        "PYTHONUNBUFFERED": "1",
    }


def test_worker_killed_after_second_tool_call_loses_nothing(tmp_path: Path) -> None:
    """X1/E2/S3: SIGKILL after the second tool call; a new worker finishes the task once,
    every stored tool result survives, none is duplicated, nothing stays running."""
    redis = redis_url()
    db_url = database_url()
    if redis is None or db_url is None:
        pytest.skip("needs REDIS_URL (a Redis broker) and a test database a worker can share")
    KnowledgeDocumentFactory(
        title="Training Budget", body="The annual training budget per employee is 1,750 EUR."
    )
    task = TaskFactory(request="What is the annual training budget per employee?")
    queue = f"drill-kill-{uuid.uuid4().hex[:10]}"
    # The reaper (lease 5 s, a sweep a second) must recover the dead attempt before Redis
    # hands the killed job's message back; 20 s leaves room for a slow worker start on a
    # loaded machine (the other test covers the redelivery winning).
    env = worker_env(tmp_path, redis, db_url, visibility=VISIBILITY_SECONDS)
    sender = Celery("drill-sender", broker=redis, set_as_current=False)
    first = Worker(env=env, queue=queue, log_path=tmp_path / "worker1.log")
    second: Worker | None = None
    try:
        sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=queue)
        started = time.monotonic()
        reached = wait_for(
            lambda: ToolEvidence.objects.filter(task_id=task.pk).count() >= 2, timeout=30
        )
        assert reached, "no second tool call within 30 s:\n" + first.output()[-3000:]
        first.kill()
        killed_at = time.monotonic()
        at_kill = {
            (e.pk, e.run_id, e.sequence, e.content_sha256)
            for e in ToolEvidence.objects.filter(task_id=task.pk)
        }
        assert len(at_kill) == 2
        assert Task.objects.get(pk=task.pk).status == S.RUNNING

        second = Worker(env=env, queue=queue, log_path=tmp_path / "worker2.log", beat=True)
        done = wait_for(
            lambda: Task.objects.get(pk=task.pk).status == S.AWAITING_FEEDBACK, timeout=60
        )
        recovered_in = time.monotonic() - killed_at
        assert done, "task did not finish after the kill:\n" + second.output()[-4000:]
        # The killed job's message comes back after the visibility timeout; that second
        # delivery must find nothing to do.
        # It says so (issue 17): ``duplicate`` (the attempt finished), or ``lease_held``
        # if it came while the re-queued attempt still ran; never a second run.
        redelivered = wait_for(
            lambda: "'duplicate'" in second.output() or "'lease_held'" in second.output(),
            timeout=max(5, VISIBILITY_SECONDS - recovered_in + 15),
        )
        total = time.monotonic() - started
    finally:
        first.stop()
        if second is not None:
            second.stop()
        sender.close()

    task = Task.objects.get(pk=task.pk)
    events = list(TaskEvent.objects.filter(task=task).order_by("at", "id"))
    path = [(e.from_status, e.to_status) for e in events]
    assert path == [
        (S.OPEN, S.RUNNING),
        (S.RUNNING, S.OPEN),  # the reaper re-queued the dead attempt
        (S.OPEN, S.RUNNING),
        (S.RUNNING, S.VALIDATING),
        (S.VALIDATING, S.AWAITING_FEEDBACK),
    ], path
    completions = sum(1 for p in path if p == (S.RUNNING, S.VALIDATING))
    assert completions == 1 and ValidationSnapshot.objects.filter(task=task).count() == 1

    evidence = list(ToolEvidence.objects.filter(task=task).order_by("run_id", "sequence"))
    # Nothing stored before the kill was lost or rewritten.
    now = {(e.pk, e.run_id, e.sequence, e.content_sha256) for e in evidence}
    lost = len(at_kill - now)
    # No tool result was stored twice: one row per (run, tool call).
    keys = [(e.run_id, e.tool_call_id) for e in evidence]
    duplicates = len(keys) - len(set(keys))
    assert lost == 0 and duplicates == 0
    runs = list(Run.objects.filter(task=task).order_by("attempt_index", "id"))
    # The re-run is the same attempt (issue 17: a crash does not spend an attempt).
    assert [r.attempt_index for r in runs] == [1, 1]
    assert task.attempt_count == 1 and task.requeue_count == 1
    assert [r.tool_evidence.count() for r in runs] == [2, 3]
    # Every tool message in each transcript has its evidence row, and vice versa.
    for run in runs:
        tool_ids = list(
            RunMessage.objects.filter(run=run, role="tool").values_list(
                "payload__tool_call_id", flat=True
            )
        )
        assert sorted(tool_ids) == sorted(e.tool_call_id for e in evidence if e.run_id == run.pk)
    # Nothing is left running: not the task, not the dead attempt's run.
    still_running = Run.objects.filter(task=task, status=RunStatus.RUNNING).count()
    assert still_running == 0, [(r.pk, r.status, r.finish_reason) for r in runs]
    assert runs[0].status == RunStatus.FAILED and runs[1].status == RunStatus.COMPLETED
    assert runs[0].finish_reason == "lease_expired"
    assert task.lease_token == "" and task.heartbeat_at is None
    assert redelivered, "the killed job was not redelivered:\n" + second.output()[-3000:]

    report(
        "worker kill",
        f"1 completed attempt (attempt 1 killed after 2 tool calls, re-queued by the reaper, "
        f"its re-run finished {recovered_in:.1f}s after the kill, attempt_count still 1), "
        f"{duplicates} duplicate evidence, {lost} lost, {still_running} left running; "
        f"the duplicate delivery (Redis redelivery after the {VISIBILITY_SECONDS} s "
        "visibility timeout) "
        f"did nothing; {total:.0f}s",
    )


def test_redelivered_job_takes_over_the_killed_attempt_without_the_reaper(
    tmp_path: Path,
) -> None:
    """Issue 17 (deliverable 2): SIGKILL mid-attempt, and no beat runs the reaper: the
    killed job's message, redelivered after the visibility timeout, takes the attempt
    over at once (new lease, same attempt, ``taken_over``); the dead run is kept
    ``failed`` with its evidence, attempt_count stays 1 and the task settles."""
    redis = redis_url()
    db_url = database_url()
    if redis is None or db_url is None:
        pytest.skip("needs REDIS_URL (a Redis broker) and a test database a worker can share")
    KnowledgeDocumentFactory(
        title="Training Budget", body="The annual training budget per employee is 1,750 EUR."
    )
    task = TaskFactory(request="What is the annual training budget per employee?")
    queue = f"drill-takeover-{uuid.uuid4().hex[:10]}"
    env = worker_env(tmp_path, redis, db_url)
    sender = Celery("drill-sender", broker=redis, set_as_current=False)
    first = Worker(env=env, queue=queue, log_path=tmp_path / "worker1.log")
    second: Worker | None = None
    try:
        sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=queue)
        reached = wait_for(
            lambda: ToolEvidence.objects.filter(task_id=task.pk).count() >= 2, timeout=30
        )
        assert reached, "no second tool call within 30 s:\n" + first.output()[-3000:]
        first.kill()
        killed_at = time.monotonic()
        at_kill = {e.pk for e in ToolEvidence.objects.filter(task_id=task.pk)}
        # No beat, and no maintenance queue: a maintenance worker sweeps once at start,
        # and would re-queue the attempt itself if the lease expired while it started.
        second = Worker(
            env=env,
            queue=queue,
            log_path=tmp_path / "worker2.log",
            purposes=(ATTEMPTS, VALIDATION, WEBHOOKS),
        )
        done = wait_for(
            lambda: Task.objects.get(pk=task.pk).status == S.AWAITING_FEEDBACK, timeout=60
        )
        recovered_in = time.monotonic() - killed_at
        output = second.output()
        assert done, "task did not finish after the kill:\n" + output[-4000:]
    finally:
        first.stop()
        if second is not None:
            second.stop()
        sender.close()

    assert "'taken_over'" in output, output[-3000:]
    task = Task.objects.get(pk=task.pk)
    path = [
        (e.from_status, e.to_status)
        for e in TaskEvent.objects.filter(task=task).order_by("at", "id")
    ]
    assert path == [
        (S.OPEN, S.RUNNING),
        (S.RUNNING, S.RUNNING),  # the redelivered job took the attempt over
        (S.RUNNING, S.VALIDATING),
        (S.VALIDATING, S.AWAITING_FEEDBACK),
    ], path
    assert task.attempt_count == 1 and task.requeue_count == 1
    runs = list(Run.objects.filter(task=task).order_by("id"))
    assert [(r.attempt_index, r.status, r.finish_reason) for r in runs][0] == (
        1,
        RunStatus.FAILED,
        "taken_over",
    )
    assert [r.status for r in runs[1:]] == [RunStatus.COMPLETED]
    assert at_kill <= {e.pk for e in ToolEvidence.objects.filter(task=task)}
    assert ValidationSnapshot.objects.filter(task=task).count() == 1
    report(
        "worker kill, no reaper",
        f"the redelivered job took attempt 1 over; settled {recovered_in:.1f}s after the kill "
        "(visibility timeout 12 s), attempt_count 1, dead run kept",
    )
