"""Recovery of attempts and validations after a worker or database fault (issue 17).

A redelivered attempt job (acks_late: a killed worker's message comes back) takes over
the attempt at once when its lease expired, instead of waiting for the reaper; with a
live lease it does nothing. Job results say what happened (``taken_over``,
``lease_held``, ``duplicate``, ``db_lost``), and an expected fault is one log line.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from evidence_app.jobs import validate_attempt_job
from evidence_app.models import ValidationSnapshot
from evidence_app.packets.task_packet import build_packet
from project.celery import app as celery_app
from tasks_app.jobs import run_attempt_job
from tasks_app.models import Run, RunStatus, Task, TaskEvent, ToolEvidence
from tasks_app.runtime.agents.loop import AgentResult
from tasks_app.runtime.attempts import Heartbeat, attempt_claim, attempt_finish
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow import transitions
from tasks_app.workflow.fence import LeaseLost
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import (
    KnowledgeDocumentFactory,
    RunFactory,
    TaskFactory,
    ToolEvidenceFactory,
)
from tests.tasks_app.test_jobs import researching_model
from tests.test_operations import metric_samples
from tests.workers import Worker, database_url, redis_url, wait_for


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Jobs published to Celery by name (the validation hand-off), not sent."""
    messages: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(
        celery_app,
        "send_task",
        lambda name, args=None, kwargs=None, **kw: messages.append((name, list(args or []))),
    )
    return messages


@pytest.fixture
def agent_model(scripted_model: Any, settings: Any) -> Any:
    """Searches the knowledge base once, then answers; the validator is the offline judge."""
    settings.AGENT_MODEL = scripted_model(researching_model(), "test:recovery")
    settings.VALIDATOR_MODEL = "offline:judge"
    KnowledgeDocumentFactory(title="Training Budget", body="The training budget is 1,750 EUR.")


def dead_attempt(lease_seconds: int) -> tuple[Task, Any, Run, ToolEvidence]:
    """A task whose attempt 1 was claimed by a worker that then died: its run is still
    ``running`` with one stored tool result, and its heartbeat is older than the lease."""
    task = TaskFactory()
    claim = attempt_claim(task_id=task.pk, worker="dead-worker")
    assert claim is not None
    run = RunFactory(task=task, attempt_index=1, status=RunStatus.RUNNING, finish_reason="")
    evidence = ToolEvidenceFactory(run=run, tool_name="search_knowledge")
    Task.objects.filter(pk=task.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=lease_seconds + 5)
    )
    return task, claim, run, evidence


@pytest.mark.django_db
def test_redelivered_job_takes_over_an_attempt_whose_lease_expired(
    agent_model: Any,
    sent: list[Any],
    settings: Any,
    client: Any,
) -> None:
    """Issue 17 (deliverable 2): the dead worker's job comes back after its lease
    expired; it takes the same attempt over at once under a new lease token (the dead
    worker is fenced out), ends the dead run ``failed`` and keeps it with its evidence,
    leaves attempt_count unchanged, and the task settles after validation. The metrics
    count the takeover."""
    settings.METRICS_SETTLE_SECONDS = 0
    task, dead, dead_run, dead_evidence = dead_attempt(settings.ATTEMPT_LEASE_SECONDS)
    takeovers = ("evidentia_reaper_actions_total", (("action", "taken_over"),))
    before = metric_samples(client.get("/metrics").content.decode()).get(takeovers, 0)

    assert run_attempt_job(task.pk) == "taken_over"
    after = metric_samples(client.get("/metrics").content.decode()).get(takeovers, 0)
    assert after - before == 1

    task.refresh_from_db()
    assert task.status == S.VALIDATING and task.attempt_count == 1
    takeover = TaskEvent.objects.get(task=task, from_status=S.RUNNING, to_status=S.RUNNING)
    assert "attempt 1 taken over" in takeover.reason and takeover.attempt_index == 1
    # The dead worker's lease is gone: its heartbeat and its result are refused.
    with pytest.raises(LeaseLost):
        dead.fence.beat()
    late = AgentResult(run_id=0, output_text="a late answer", finish_reason="stop", success=True)
    assert attempt_finish(claim=dead, result=late) is None
    dead_run.refresh_from_db()
    assert dead_run.status == RunStatus.FAILED and dead_run.finish_reason == "taken_over"
    assert "taken over" in dead_run.error
    assert ToolEvidence.objects.filter(pk=dead_evidence.pk, run=dead_run).exists()
    live = Run.objects.filter(task=task, attempt_index=1).exclude(pk=dead_run.pk).get()
    assert live.status == RunStatus.COMPLETED
    assert sent == [] or sent == [("evidence_app.validate_attempt", [task.pk, 1])]

    result = validate_attempt_job(task.pk, 1)
    assert result not in ("duplicate", "no validation")
    task.refresh_from_db()
    assert task.status not in (S.RUNNING, S.VALIDATING) and task.attempt_count == 1
    assert task.lease_token == "" and task.heartbeat_at is None
    assert list(TaskEvent.objects.filter(task=task).values_list("from_status", "to_status")) == [
        (S.OPEN, S.RUNNING),
        (S.RUNNING, S.RUNNING),
        (S.RUNNING, S.VALIDATING),
        (S.VALIDATING, task.status),
    ]
    # The validator judged the live run, not the dead one's partial work.
    assert ValidationSnapshot.objects.filter(task=task).count() == 1
    packet = build_packet(task, 1)
    assert packet.main_run is not None and packet.main_run.run_id == live.pk
    assert dead_run.pk not in [run.run_id for run in packet.all_runs]


@pytest.mark.django_db
def test_redelivered_job_leaves_a_live_lease_alone(
    agent_model: Any,
    sent: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 17: a duplicate delivery while the attempt's worker still beats returns
    ``lease_held`` and changes nothing: same token, same status, no new run or event;
    one INFO line with the task id, no traceback."""
    task = TaskFactory()
    claim = attempt_claim(task_id=task.pk, worker="live-worker")
    assert claim is not None
    run = RunFactory(task=task, attempt_index=1, status=RunStatus.RUNNING, finish_reason="")
    events = TaskEvent.objects.filter(task=task).count()

    with caplog.at_level(logging.INFO, logger="tasks_app.runtime.attempts"):
        assert run_attempt_job(task.pk) == "lease_held"

    task.refresh_from_db()
    assert task.status == S.RUNNING and task.lease_token == claim.lease_token
    assert task.attempt_count == 1 and TaskEvent.objects.filter(task=task).count() == events
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and Run.objects.filter(task=task).count() == 1
    claim.fence.beat()  # the live worker still holds its lease
    lines = [r for r in caplog.records if r.name == "tasks_app.runtime.attempts"]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert f"task {task.pk}: lease_held" in lines[0].getMessage() and lines[0].exc_info is None


@pytest.mark.django_db
def test_duplicate_validation_job_returns_duplicate_and_writes_no_second_snapshot(
    agent_model: Any,
    sent: list[Any],
    settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 17 (deliverable 2): the validation job delivered twice: the second returns
    ``duplicate`` (not the verdict, which would read like a second validation), logs one
    INFO line saying so, and stores no second snapshot."""
    task = TaskFactory()
    assert run_attempt_job(task.pk) == S.VALIDATING
    first = validate_attempt_job(task.pk, 1)
    assert first not in ("duplicate", "no validation")
    task.refresh_from_db()
    settled = task.status

    with caplog.at_level(logging.INFO, logger="evidence_app"):
        assert validate_attempt_job(task.pk, 1) == "duplicate"

    assert ValidationSnapshot.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert task.status == settled
    lines = [r for r in caplog.records if r.name.startswith("evidence_app")]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO and lines[0].exc_info is None
    assert f"task {task.pk}" in lines[0].getMessage() and "duplicate" in lines[0].getMessage()


def heartbeat_backends() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.postgres(
    reason="pg_terminate_backend drops the heartbeat's connection; SQLite has no server"
)
@pytest.mark.django_db(transaction=True)
def test_heartbeat_logs_a_dropped_database_connection_as_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 17 (deliverable 5): the heartbeat thread's database backend is terminated
    (pg_terminate_backend, as in a failover): one WARNING line with the task id, no
    traceback; the next beat reconnects and the lease is refreshed again."""
    task = TaskFactory()
    claim = attempt_claim(task_id=task.pk)
    assert claim is not None

    def beaten_since(moment: Any) -> bool:
        return Task.objects.get(pk=task.pk).heartbeat_at > moment

    with caplog.at_level(logging.INFO, logger="tasks_app.runtime.attempts"):
        with Heartbeat(claim.fence, interval=0.2):
            start = Task.objects.get(pk=task.pk).heartbeat_at
            assert wait(lambda: beaten_since(start)), "the heartbeat never beat"
            pids = heartbeat_backends()
            assert pids, "the heartbeat thread holds no connection"
            with connection.cursor() as cursor:
                for pid in pids:
                    cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            assert wait(lambda: any(r.levelno == logging.WARNING for r in caplog.records))
            lost_at = timezone.now()
            assert wait(lambda: beaten_since(lost_at)), "the heartbeat did not reconnect"

    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].exc_info is None
    message = warnings[0].getMessage()
    assert f"task {task.pk}: db_lost" in message and "\n" not in message


def wait(predicate: Any, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.django_db
def test_reaper_requeue_reruns_the_same_attempt_without_spending_an_attempt(
    agent_model: Any,
    sent: list[Any],
    settings: Any,
    client: Any,
) -> None:
    """Issue 17 (deliverable 3, two budgets): the reaper re-queues an attempt whose
    worker died; the next job re-runs attempt 1 (attempt_count stays 1, so the task keeps
    both of its validator-driven attempts), the re-run is counted on the task and shown
    in the API and on the progress line, and the dead run stays stored but out of the
    validation packet."""
    settings.MAX_ATTEMPTS = 2
    task, _, dead_run, dead_evidence = dead_attempt(settings.ATTEMPT_LEASE_SECONDS)

    report = attempt_reap()
    assert report.requeued == [task.pk]
    task.refresh_from_db()
    assert task.status == S.OPEN and task.attempt_count == 1 and task.requeue_count == 1

    assert run_attempt_job(task.pk) == S.VALIDATING
    task.refresh_from_db()
    assert task.attempt_count == 1 and task.requeue_count == 1
    started = TaskEvent.objects.filter(task=task, to_status=S.RUNNING).last()
    assert started.reason.startswith("attempt 1 re-run 1 started") and started.attempt_index == 1
    dead_run.refresh_from_db()
    assert dead_run.status == RunStatus.FAILED and dead_run.finish_reason == "lease_expired"
    assert ToolEvidence.objects.filter(pk=dead_evidence.pk).exists()
    packet = build_packet(task, 1)
    assert dead_run.pk not in [run.run_id for run in packet.all_runs]
    assert packet.main_run is not None and packet.main_run.status == RunStatus.COMPLETED

    client.force_login(task.owner)
    body = client.get(f"/api/v1/tasks/{task.pk}").json()
    assert (body["attempt_count"], body["max_attempts"], body["rerun_count"]) == (1, 2, 1)
    page = client.get(f"/tasks/{task.pk}/progress/").content.decode()
    assert "attempt 1 of 2, re-run 1 time after a worker fault" in page


@pytest.mark.django_db
def test_takeover_past_the_rerun_budget_fails_the_task_with_the_reason(
    agent_model: Any,
    sent: list[Any],
    settings: Any,
) -> None:
    """Issue 17 (deliverable 3): infrastructure re-runs have their own cap
    (ATTEMPT_MAX_REQUEUES); a redelivered job finding the cap spent fails the task with
    the reason instead of running the attempt again."""
    settings.ATTEMPT_MAX_REQUEUES = 1
    task, _, dead_run, _ = dead_attempt(settings.ATTEMPT_LEASE_SECONDS)

    assert run_attempt_job(task.pk) == "taken_over"  # re-run 1 of 1
    task.refresh_from_db()
    assert task.requeue_count == 1 and task.attempt_count == 1
    # The validator asks for a revision; attempt 2's worker dies too.
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVISION, reason="test")
    )
    assert attempt_claim(task_id=task.pk, worker="dies-too") is not None
    Task.objects.filter(pk=task.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))

    assert run_attempt_job(task.pk) == S.FAILED
    task.refresh_from_db()
    assert task.status == S.FAILED and task.attempt_count == 2 and task.requeue_count == 1
    reason = TaskEvent.objects.filter(task=task).last().reason
    assert "already re-run 1 times" in reason


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_maintenance_worker_sweeps_at_start_before_any_beat_tick(
    settings: Any, tmp_path: Path
) -> None:
    """Issue 17 (deliverable 2): a worker consuming ``maintenance`` runs one reaper sweep
    when it starts, with no beat running: a task stuck in ``validating`` whose job was
    lost gets it re-sent and settles, an attempt whose lease expired is re-queued and
    re-run; an attempt whose lease is still valid is left alone (same lease, no event)."""
    redis = redis_url()
    db_url = database_url()
    if redis is None or db_url is None:
        pytest.skip("needs REDIS_URL (a Redis broker) and a test database a worker can share")
    lease = 60
    settings.AGENT_MODEL = "offline:researcher"
    settings.VALIDATOR_MODEL = "offline:judge"
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="Everyone can learn. The annual training budget per employee is 1,750 EUR.",
    )
    # Attempt 1 ran here; its validation job went to the test's own broker, which no
    # worker reads: the job is lost. Nothing has happened to the task for an hour.
    stuck = TaskFactory(request="What is the annual training budget per employee?")
    assert run_attempt_job(stuck.pk) == S.VALIDATING
    Task.objects.filter(pk=stuck.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    dead, _, _, _ = dead_attempt(lease)
    Task.objects.filter(pk=dead.pk).update(
        request="What is the annual training budget per employee?"
    )
    live = TaskFactory()
    live_claim = attempt_claim(task_id=live.pk, worker="live-worker")
    assert live_claim is not None
    live_events = TaskEvent.objects.filter(task=live).count()

    queue = f"start-sweep-{uuid.uuid4().hex[:10]}"
    worker = Worker(
        env={
            "DATABASE_URL": db_url,
            "CELERY_BROKER_URL": redis,
            "AGENT_MODEL": "offline:researcher",
            "VALIDATOR_MODEL": "offline:judge",
            "ATTEMPT_LEASE_SECONDS": str(lease),
            "EVIDENTIA_VAR_DIR": str(tmp_path),
        },
        queue=queue,
        log_path=tmp_path / "worker.log",
    )
    started = time.monotonic()
    try:

        def settled() -> bool | None:
            statuses = dict(
                Task.objects.filter(pk__in=[stuck.pk, dead.pk]).values_list("pk", "status")
            )
            if all(s not in (S.OPEN, S.RUNNING, S.VALIDATING) for s in statuses.values()):
                return True
            return None if worker.alive else False

        done = wait_for(settled, timeout=60, interval=0.3)
        elapsed = time.monotonic() - started
    finally:
        worker.stop()
    output = worker.output()
    assert done, output[-4000:]
    assert "reaper sweep at worker start: 1 re-queued" in output, output[-4000:]
    stuck.refresh_from_db()
    assert stuck.attempt_count == 1 and ValidationSnapshot.objects.filter(task=stuck).count() == 1
    dead.refresh_from_db()
    assert dead.attempt_count == 1 and dead.requeue_count == 1
    live.refresh_from_db()
    assert live.status == S.RUNNING and live.lease_token == live_claim.lease_token
    assert TaskEvent.objects.filter(task=live).count() == live_events
    print(f"\nstart sweep: both tasks settled {elapsed:.1f}s after the worker was started")
