"""Issue 16: queues by purpose, and a reaper that never re-sends a job still queued."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from project.broker import held_job_ids
from project.celery import app as celery_app
from project.celery import configure
from project.queues import queue_name
from tasks_app.models import Task
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory
from tests.workers import redis_url, sender_app


def _queue_of(job_name: str) -> str:
    return celery_app.amqp.router.route({}, job_name)["queue"].name


def test_jobs_are_routed_to_a_queue_per_purpose(settings: Any) -> None:
    """Issue 16: attempts, validation, webhooks and the reaper each have their queue;
    a prefix namespaces them all; the default queue stays for anything else."""
    assert _queue_of("tasks_app.run_attempt") == "attempts"
    assert _queue_of("evidence_app.validate_attempt") == "validation"
    assert _queue_of("evidence_app.replay_validation") == "validation"
    assert _queue_of("tasks_app.reap_attempts") == "maintenance"
    assert _queue_of("external_app.deliver_webhook") == "webhooks"
    assert _queue_of("something.unrouted") == settings.CELERY_TASK_DEFAULT_QUEUE
    schedule = celery_app.conf.beat_schedule["reap-stale-attempts"]
    assert schedule["options"]["queue"] == "maintenance"

    settings.CELERY_QUEUE_PREFIX = "blue."
    try:
        configure(celery_app)
        assert _queue_of("tasks_app.run_attempt") == "blue.attempts"
        assert {q.name for q in celery_app.conf.task_queues} == {
            settings.CELERY_TASK_DEFAULT_QUEUE,
            "blue.attempts",
            "blue.validation",
            "blue.webhooks",
            "blue.maintenance",
        }
    finally:
        settings.CELERY_QUEUE_PREFIX = ""
        configure(celery_app)


@pytest.mark.django_db
def test_reaper_leaves_a_queued_job_alone_and_resends_a_lost_one(
    requester: Any, settings: Any, django_capture_on_commit_callbacks: Any, _isolated_broker: Path
) -> None:
    """Issue 16: a task whose attempt job waits in the queue longer than a lease period
    is not sent again (its recorded job id is still in the broker); once the message is
    gone (a broker restart lost it), the next sweep sends a new one under a new id."""
    settings.ATTEMPT_LEASE_SECONDS = 300
    with django_capture_on_commit_callbacks(execute=True):
        task = services.task_create(owner=requester, request="Waits behind a backlog")
    task.refresh_from_db()
    assert task.job_id in held_job_ids()
    old = timezone.now() - timedelta(minutes=10)
    Task.objects.filter(pk=task.pk).update(updated_at=old)

    with django_capture_on_commit_callbacks(execute=True):
        assert attempt_reap().reenqueued == []
    assert Task.objects.get(pk=task.pk).job_id == task.job_id

    queue_folder = _isolated_broker / "queue"
    for message in queue_folder.iterdir():
        if message.name.endswith(f".{queue_name('attempts')}.msg"):
            message.unlink()
    assert task.job_id not in held_job_ids()
    with django_capture_on_commit_callbacks(execute=True):
        assert attempt_reap().reenqueued == [task.pk]
    task.refresh_from_db()
    assert task.status == S.OPEN and task.job_id and task.job_id in held_job_ids()


@pytest.mark.django_db
def test_reaper_does_not_resend_a_validation_still_queued(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 16: a task validating for longer than a lease period whose validation job is
    still in the broker (queued behind others, or running) gets no second copy."""
    settings.ATTEMPT_LEASE_SECONDS = 300
    task = TaskFactory(status=S.VALIDATING, attempt_count=1)
    with django_capture_on_commit_callbacks(execute=True):
        services.validation_enqueue(task.pk, 1)
    Task.objects.filter(pk=task.pk).update(updated_at=timezone.now() - timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert attempt_reap().revalidated == []
    assert callbacks == []


def test_redis_broker_reports_queued_job_ids(tmp_path: Path) -> None:
    """Issue 16: on Redis, a job id is held while its message is queued (any priority)
    and no longer once it was taken off the queue."""
    url = redis_url()
    if url is None:
        pytest.skip("needs a Redis broker (REDIS_URL)")
    queue = f"test-held-{uuid.uuid4().hex[:8]}"
    sender = sender_app(name="held-sender", redis=url, folder=tmp_path)
    plain, urgent = str(uuid.uuid4()), str(uuid.uuid4())
    saved = celery_app.conf.broker_read_url
    celery_app.conf.broker_read_url = url
    try:
        sender.send_task("tasks_app.run_attempt", args=[1], queue=queue, task_id=plain)
        sender.send_task("tasks_app.run_attempt", args=[2], queue=queue, task_id=urgent, priority=9)
        assert {plain, urgent} <= (held_job_ids([queue]) or set())
        with sender.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)
        held = held_job_ids([queue]) or set()
        assert plain not in held and urgent not in held
    finally:
        celery_app.conf.broker_read_url = saved
        sender.close()
